"""Sandboxes: where a run's tools act, and the standard tools that act there."""

from machine.runs._project import final_files

from ._hidden_tests import HiddenTests, hidden_tests
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
    "HiddenTests",
    "IsolationReport",
    "Limits",
    "LocalSandbox",
    "Mount",
    "SandboxEscape",
    "bubblewrap",
    "edit_file",
    "final_files",
    "hidden_tests",
    "list_files",
    "read_file",
    "run",
    "search_files",
    "web_fetch",
    "write_file",
]
