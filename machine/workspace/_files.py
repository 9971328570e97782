"""A machine's cases files, found one way for every face: named inside the machine's own folder, never a
path elsewhere. A cases file's contents go to models (an optimizer is shown them) and into stored runs,
so a file outside the folder (an absolute path, a ``..``, a link that leads out) is refused, as is any
name an MCP tool is given that is more than a file name."""

from __future__ import annotations

import json
import re
from pathlib import Path

from machine.errors import BadInputError, NotFoundError

CASES_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.json$")
"""A cases file named by a caller that may not name paths: a file in the machine's own folder."""


def cases_files(folder: Path) -> list[str]:
    """The machine's JSON files that hold cases (a list, or ``{"cases": [...]}``), not its versions,
    model or scripts."""
    names = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # not a cases file a suite can read
            continue
        if isinstance(data, list) or (isinstance(data, dict) and isinstance(data.get("cases"), list)):
            names.append(path.name)
    return names


def folder_cases_file(
    folder: Path,
    name: str,
    file: str | Path | None,
    *,
    default: str = "cases.json",
    names_only: bool = False,
    what: str = "cases",
) -> Path:
    """The cases file ``file`` names in machine ``name``'s ``folder`` (``default`` when None): a file name
    there, or (unless ``names_only``) a path, relative to the folder or else to the current directory,
    that leads inside it, links followed. Anything else is refused, naming the argument ``what``."""
    given = str(file) if file is not None else default
    if names_only and not CASES_NAME.match(given):
        raise _not_ours(folder, name, given, what)
    path = Path(given)
    candidates = [path] if path.is_absolute() else [folder / path, Path.cwd() / path]
    found = next((p for p in candidates if p.exists()), candidates[0])
    where = found.resolve()
    if not where.is_relative_to(folder.resolve()) or where.suffix != ".json":
        raise _not_ours(folder, name, given, what)
    if not where.is_file():
        listing = ", ".join(cases_files(folder)) or "none"
        raise NotFoundError(
            f"{what} file {given!r} of machine {name!r} does not exist: name a .json file in its folder "
            f"{folder} (available: {listing})"
        )
    return where


def _not_ours(folder: Path, name: str, given: str, what: str) -> BadInputError:
    listing = ", ".join(cases_files(folder)) or "none"
    return BadInputError(
        f"{what} file {given!r} is not a cases file of machine {name!r}: cases are read from the "
        f"machine's own folder ({folder}) only; name a .json file there (available: {listing})"
    )


def hidden_from_runs(folder: Path, data_dir: Path, machines_dir: Path) -> list[str]:
    """What a run working in the project ``folder`` may not see of its workspace, relative to it: the
    store, and the machines (what a run wrote there would pass for machine code the person wrote)."""
    folder, machines = folder.resolve(), machines_dir.resolve()
    if folder.is_relative_to(machines):
        raise BadInputError(
            f"{folder} is inside the workspace's machines folder, where a run's changes would pass for "
            "machine code you wrote: run it from another folder"
        )
    inside = [data_dir.resolve(), machines]
    return [path.relative_to(folder).as_posix() for path in inside if path.is_relative_to(folder)]
