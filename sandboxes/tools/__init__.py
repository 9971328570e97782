"""The standard tools a machine's model uses: list_files, search_files, read_file, write_file,
edit_file and run act in the run's sandbox; web_fetch reads the web from the machine's process.

Every path a file tool takes goes through ``sandbox.resolve``, so ``..``, absolute paths and symlinks
that lead outside the run's directory come back to the model as a ToolFailure that says why. ``run``
refuses unless the sandbox isolates its commands, because the model wrote them. ``web_fetch`` is
guarded against reaching the machine's own networks (see ``web.fetch``).
"""

from typing import TYPE_CHECKING, Any

from .command import run
from .files import FILE_TOOLS, edit_file, list_files, read_file, search_files, write_file
from .html import html_to_text
from .web import (
    FetchError,
    FetchRefused,
    IPAddress,
    Page,
    Policy,
    Resolver,
    is_public_address,
    make_web_fetch,
    public_only,
    resolve_host,
    web_fetch,
)

if TYPE_CHECKING:
    from .web import fetch


def __getattr__(name: str) -> Any:
    """``fetch`` loads the HTTP client, so it is imported when first asked for."""
    if name == "fetch":
        from .web import fetch

        return fetch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FILE_TOOLS",
    "FetchError",
    "FetchRefused",
    "IPAddress",
    "Page",
    "Policy",
    "Resolver",
    "edit_file",
    "fetch",
    "html_to_text",
    "is_public_address",
    "list_files",
    "make_web_fetch",
    "public_only",
    "read_file",
    "resolve_host",
    "run",
    "search_files",
    "web_fetch",
    "write_file",
]
