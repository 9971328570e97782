"""What a sandbox shows of this library, so that a command inside can run the library's own Python:
``sys.executable -P -m machine.<module>`` with the machine package and its dependencies importable.

The interpreter (its installation, and the links that lead to it), the virtual environment's
``pyvenv.cfg`` and site-packages, and the folders of machine's own packages (a source checkout's, for an
editable install) are shown read-only at their own paths, each found from this very process; nothing else
of where they live is: not the checkout's other files, not its workspace's ``.machine``, not the home
folder the interpreter may sit in. docs/sandboxes.md describes the result.
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
from functools import cache
from pathlib import Path

from ._bwrap import SYSTEM_DIRS, SYSTEM_LINKS

LIBRARY_WORKDIR = "/vetting"
"""Where the directory of a library sandbox is shown: not ``/work``, so that a library installed under
``/work`` (a checkout there) can be shown at its own path."""
PACKAGES = ("machine", "machine.clients", "machine.machinist", "machine.sandboxes", "machine.server")
"""machine's packages; in a source checkout the four adapters are folders beside ``machine/``."""


def _visible(path: str, shown: list[str]) -> bool:
    """Whether ``path`` is inside the system folders every sandbox shows, or a folder already shown."""
    folders = [*SYSTEM_DIRS, *SYSTEM_LINKS, *shown]
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _links(path: str) -> tuple[list[tuple[str, str]], str]:
    """The symbolic links from ``path`` to the file it names, as (target, link) pairs, and that file."""
    chain: list[tuple[str, str]] = []
    seen: set[str] = set()
    while os.path.islink(path) and path not in seen and len(chain) < 40:
        seen.add(path)
        target = os.readlink(path)
        chain.append((target, path))
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return chain, path


def _package_folders() -> list[str]:
    """The folders machine's packages are imported from here."""
    found: list[str] = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            resolved = str(Path(folder).resolve())
            if resolved not in found:
                found.append(resolved)
    return found


@cache
def library_args() -> tuple[str, ...]:
    """The bwrap arguments that show the interpreter and the library read-only at their own paths."""
    args: list[str] = []
    shown: list[str] = []

    def bind(path: str) -> None:
        if os.path.exists(path) and not _visible(path, shown):
            args.extend(["--ro-bind", path, path])
            shown.append(path)

    base = os.path.realpath(sys.base_prefix)
    bind(base)  # the interpreter's installation: its binary, its shared library, the standard library
    links, binary = _links(sys.executable)
    for target, link in links:
        if not _visible(link, shown):
            args.extend(["--symlink", target, link])
    bind(binary)
    if sys.prefix != sys.base_prefix:  # a virtual environment: what makes the interpreter use it
        bind(os.path.join(sys.prefix, "pyvenv.cfg"))
    for folder in site.getsitepackages():
        bind(os.path.realpath(folder))
    user = site.getusersitepackages()
    if site.ENABLE_USER_SITE and user in sys.path:
        bind(user)
    for folder in _package_folders():
        bind(folder)
    return tuple(args)


def library_environment() -> dict[str, str]:
    """What a command needs in its environment to import machine: the folder above the package on
    ``PYTHONPATH`` where that is not a site-packages folder (a source checkout, run from where it is)."""
    spec = importlib.util.find_spec("machine")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        return {}
    above = str(Path(folders[0]).resolve().parent)
    if above in {str(Path(folder).resolve()) for folder in site.getsitepackages()}:
        return {}
    return {"PYTHONPATH": above}
