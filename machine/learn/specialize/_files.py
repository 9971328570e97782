"""The files an author model writes for a child machine, read from its reply.

The reply carries each file as ``<file path="machine.py">...</file>``, so any chat model can be the author.
Nothing in it is trusted: a path is accepted only when it names one of the few files a child may have,
directly in the child's folder, and a file only up to a size and only as text a person reads as it is
(code with every name in ASCII, no character that renders blank or as nothing); everything else is refused
with a sentence the author can act on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from machine.spec import hidden_character, unreviewable

from .._replies import file_blocks, outside_files

CHILD_FILES = ("machine.py", "rubric.py", "instructions.md")
"""The files an author may write, relative to the child's folder."""
REQUIRED_FILES = ("machine.py", "rubric.py")
"""The files every child needs (instructions.md only when machine.py reads it)."""
MAX_FILE_BYTES = 200_000
"""The most a file of a child may hold, in UTF-8 bytes."""

_FENCE = re.compile(r"\A```[\w+-]*[ \t]*\n(?P<inner>.*?)\n?```[ \t]*\Z", re.DOTALL)


@dataclass(frozen=True)
class AuthoredFiles:
    """What a reply wrote: the accepted files (path -> content; the last block of a path wins), a sentence
    for each refused block, the text around the blocks, and the required files it did not write."""

    files: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    explanation: str = ""
    missing: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """Every refusal and every missing file, as sentences to send back to the author."""
        absent = [
            f'no {name} was written: reply with a <file path="{name}">...</file> block holding it'
            for name in self.missing
        ]
        return [*self.refused, *absent]

    @property
    def ok(self) -> bool:
        """Whether the reply wrote every required file and had nothing refused."""
        return not self.problems


def path_problem(path: str, allowed: Sequence[str] = CHILD_FILES) -> str | None:
    """Why ``path`` is not one of the ``allowed`` files an author may write (None: it is one)."""
    if not path.strip():
        return "the path is empty"
    if "\\" in path:
        return "the path has a backslash"
    if re.match(r"^[A-Za-z]:", path):
        return "the path names a drive"
    if path.startswith("/"):
        return "the path is absolute"
    if ".." in path.split("/"):
        return 'the path climbs out of the child\'s folder with ".."'
    if "/" in path:
        return "the path is inside a folder, and a child's files sit directly in its own folder"
    if path not in allowed:
        return "it is not one of the files that may be written"
    return None


def _trimmed(body: str) -> str:
    """The block's content without the newline after the opening tag and the one before the closing tag,
    nor a code fence wrapped around the whole of it."""
    body = body.removeprefix("\r\n") if body.startswith("\r\n") else body.removeprefix("\n")
    body = body.removesuffix("\n").removesuffix("\r")
    fenced = _FENCE.match(body)
    return fenced.group("inner") if fenced else body


def read_files(
    text: str, *, allowed: Sequence[str] = CHILD_FILES, required: Sequence[str] = REQUIRED_FILES
) -> AuthoredFiles:
    """The files in an author's reply (a child's, unless ``allowed`` says otherwise), with a sentence for
    each block refused and the ``required`` files it did not write."""
    files: dict[str, str] = {}
    refused: list[str] = []
    only = "write only " + ", ".join(allowed) + ", each named by its bare file name"
    for written, body in file_blocks(text):
        raw = written.strip()
        path = raw.removeprefix("./")
        why = path_problem(path, allowed)
        if why is not None:
            refused.append(f"<file path={raw!r}> was refused: {why}; {only}.")
            continue
        content = _trimmed(body)
        size = len(content.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            refused.append(
                f"<file path={raw!r}> was refused: it holds {size:,} bytes, more than the "
                f"{MAX_FILE_BYTES:,} a child's file may hold; write it shorter."
            )
            continue
        hidden = unreviewable(content) if path.endswith(".py") else hidden_character(content)
        if hidden is not None:  # what the person would review is not what runs, or is read
            refused.append(f"<file path={raw!r}> was refused: {hidden}.")
            continue
        files[path] = content
    explanation = outside_files(text)
    missing = [name for name in required if name not in files]
    return AuthoredFiles(files=files, refused=refused, explanation=explanation, missing=missing)


def file_text(content: str) -> str:
    """A file's text as it is written: ending with a newline."""
    return content if content.endswith("\n") or not content else content + "\n"


def code_files(folder: Path, files: Mapping[str, str]) -> dict[Path, str]:
    """The Python files among ``files`` as they will be written in ``folder``: what a model wrote that
    runs when imported, and so must be trusted first."""
    return {folder / path: file_text(text) for path, text in files.items() if path.endswith(".py")}


def write_child(folder: Path, files: Mapping[str, str], *, model: str | None = None) -> None:
    """Write ``files`` into ``folder`` (and ``model.json`` when ``model`` is given). Nothing else in it
    is touched: its cases, versions.json and any child machines of its own stay as they are."""
    wrong = [path for path in files if path_problem(path) is not None]
    if wrong:
        raise ValueError(f"{wrong[0]!r} is not a file of a child's folder: {path_problem(wrong[0])}")
    if folder.is_symlink() or folder.is_file():
        raise ValueError(f"{folder} is not a folder: move it away before writing a child there")
    folder.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        (folder / path).write_text(file_text(content), encoding="utf-8")
    if model is not None:
        (folder / "model.json").write_text(f'{{"model": {json.dumps(model)}}}\n', encoding="utf-8")
