"""Sandboxes: where a run's tools act, and the standard tools that act there."""

# Imported by its path (``import sandboxes`` from the repository root), this folder would load its modules
# a second time beside those of machine.sandboxes, with a second copy of each class.
if __name__ != "machine.sandboxes":
    raise ImportError(
        f"{__name__!r} is the folder of machine.sandboxes, imported by its path: import machine.sandboxes"
    )

from machine.runs import final_files

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
