"""Sandboxes: where a run's tools act, and the standard tools that act there."""

from ._local import ExecResult, IsolationReport, Limits, LocalSandbox, Mount, SandboxEscape, bubblewrap
from .tools import (
    FILE_TOOLS,
    edit_file,
    list_files,
    read_file,
    run,
    search_files,
    web_fetch,
    write_file,
)

__all__ = [
    "FILE_TOOLS",
    "ExecResult",
    "IsolationReport",
    "Limits",
    "LocalSandbox",
    "Mount",
    "SandboxEscape",
    "bubblewrap",
    "edit_file",
    "list_files",
    "read_file",
    "run",
    "search_files",
    "web_fetch",
    "write_file",
]
