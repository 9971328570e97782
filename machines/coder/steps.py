"""What a run did with the standard tools, read from its trajectory: each call with the result it got.

coder, dev and julia grade from this: which files a run changed, what its commands printed and how
they exited, and what a file held when a command ran it. Everything comes from the real tool results
(``write_file`` and ``edit_file`` only count when their result is not an error; an exit code is read
from what ``run`` or ``run_julia`` returned), never from what the model says it did.

The result of ``run`` (and of julia's ``run_julia``) starts with ``exit code: N``, or with ``timed out``
when the command was killed; ``--- stdout ---`` and ``--- stderr ---`` sections follow.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any

from machine import Message, Run, ToolCall

WORKDIR = "/work"
"""Where the run's directory appears inside the sandbox; a path under it names the same file."""
CHANGING_TOOLS = ("write_file", "edit_file")

PASSIVE = frozenset(
    {
        "echo", "printf", "true", ":", "ls", "pwd", "cd", "cat", "head", "tail", "less", "more", "wc",
        "file", "stat", "grep", "diff", "sort", "uniq", "tee", "cp", "mv", "rm", "touch", "mkdir",
        "chmod", "sleep",
    }
)  # fmt: skip
"""Commands that show, move or wait but run nothing of the project: ``cat primes.py`` names the file
without running it, and ``echo ok`` after a change checks nothing."""

_SEPARATORS = re.compile(r"&&|\|\||[;|&\n]")
_EXIT = re.compile(r"\Aexit code:\s*(-?\d+)\s*$", re.MULTILINE)
_SECTION = re.compile(r"^--- (stdout|stderr) ---$", re.MULTILINE)


@dataclass(frozen=True)
class Step:
    """One tool call and the tool message that answered it (None if the run ended before it)."""

    index: int
    call: ToolCall
    result: Message | None

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def ok(self) -> bool:
        """The tool did what was asked (it did not answer with an error)."""
        return self.result is not None and not self.result.is_error

    @property
    def text(self) -> str:
        return self.result.content if self.result is not None else ""

    def argument(self, name: str, default: Any = None) -> Any:
        return (self.call.arguments or {}).get(name, default)


def steps(run: Run) -> list[Step]:
    """Every tool call of the run, in order, paired with its result by call id."""
    results = {m.tool_call_id: m for m in run.trajectory if m.role == "tool" and m.tool_call_id}
    return [Step(i, call, results.get(call.id)) for i, call in enumerate(run.tool_calls)]


def normalize(path: str) -> str:
    """A sandbox path as one spelling: ``./a.py``, ``/work/a.py`` and ``a.py`` are all ``a.py``."""
    path = path.strip()
    if path == WORKDIR or path.startswith(WORKDIR + "/"):
        path = path[len(WORKDIR) :].lstrip("/")
    return posixpath.normpath(path or ".")


def exit_code(result: str) -> int | None:
    """The exit code at the head of a run result; None when it timed out or the text has none."""
    found = _EXIT.match(result.lstrip())
    return int(found.group(1)) if found else None


def output_section(result: str, which: str) -> str:
    """The ``stdout`` or ``stderr`` section of a run result ("" when it is empty or absent)."""
    sections = list(_SECTION.finditer(result))
    for at, match in enumerate(sections):
        if match.group(1) == which:
            end = sections[at + 1].start() if at + 1 < len(sections) else len(result)
            text = result[match.end() : end].strip("\n")
            return "" if text == "(empty)" else text
    return ""


def passed(step: Step) -> bool:
    """A command step whose tool result says it exited 0."""
    return step.ok and exit_code(step.text) == 0


def command(step: Step) -> str:
    value = step.argument("command", "")
    return value if isinstance(value, str) else ""


def changes(run: Run) -> list[Step]:
    """The steps that changed a file: write_file or edit_file calls that succeeded."""
    return [
        s for s in steps(run) if s.name in CHANGING_TOOLS and s.ok and isinstance(s.argument("path"), str)
    ]


def files_at(run: Run, before: int | None = None) -> dict[str, str]:
    """The text of each file the run knows about, as the run's own successful writes and edits left it
    before step ``before`` (all of them when None), starting from the case's files. A file the run
    neither started with nor wrote is absent."""
    case_files = (run.case or {}).get("files") or {}
    files = {normalize(name): text for name, text in case_files.items() if isinstance(text, str)}
    for step in changes(run):
        if before is not None and step.index >= before:
            break
        path = normalize(step.argument("path"))
        if step.name == "write_file":
            content = step.argument("content")
            if isinstance(content, str):
                files[path] = content
        else:
            old, new = step.argument("old"), step.argument("new")
            if path in files and isinstance(old, str) and isinstance(new, str):
                files[path] = files[path].replace(old, new, 1)
    return files


def simple_commands(command_line: str) -> list[list[str]]:
    """The words of each simple command in a shell line (split at ``&&``, ``||``, ``;``, ``|``, ``&``
    and line breaks), without ``VAR=value`` assignments before the command."""
    found = []
    for part in _SEPARATORS.split(command_line):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
            words = words[1:]
        if words:
            found.append(words)
    return found


def active(words: list[str]) -> bool:
    """A simple command that runs something (not one of PASSIVE)."""
    return bool(words) and words[0].strip("()") not in PASSIVE


def runs_file(command_line: str, path: str) -> bool:
    """Whether some simple command of the line runs something and names ``path``: ``python3 x.py``,
    ``./x.sh`` or ``cd src && python3 x.py`` do; ``cat x.py`` and ``ls x.py`` do not."""
    return any(active(words) and mentions(" ".join(words), path) for words in simple_commands(command_line))


def mentions(command_line: str, path: str) -> bool:
    """Whether a command line names the file ``path`` (as written, with ``./`` or ``/work/`` before it,
    or by its file name alone after a ``cd``)."""
    path = normalize(path)
    names = {path, posixpath.basename(path)}
    for name in names:
        pattern = rf"(?<![\w./-])(?:\./|{re.escape(WORKDIR)}/)?{re.escape(name)}(?![\w.-])"
        if re.search(pattern, command_line):
            return True
    return False
