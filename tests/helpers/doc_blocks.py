"""The fenced code blocks of README.md and docs/, read the way the docs test runs them.

A block is ``python``, ``sh``, ``json``, ``markdown`` or plain (a synopsis or a sample of output). An
HTML comment on the line just above a fence (invisible when the page is rendered) says what a block is
when its fence cannot:

- ``<!-- file: PATH -->``: the block is a file's whole text, written to PATH in the workspace (a python
  block whose first line is ``# PATH`` says the same by itself);
- ``<!-- excerpt: PATH -->``: the block is lines of a file of this repository (``...`` for the lines
  left out), which the machines' own tests load and run;
- ``<!-- background -->``: an sh block that serves until the page's next block has run;
- ``<!-- set-up: REASON -->``: a command that sets up this repository itself (``make``, ``pip``), run by
  CI as it is, not again inside the test;
- ``<!-- output -->``: a plain block is what the page's last command printed: each of its lines comes out
  of it, in order (``...`` in a line stands for any text, a line of ``...`` alone for any lines, and run
  ids match any run id), so a figure the page shows is one that really comes out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = (
    "README.md",
    "docs/concepts.md",
    "docs/getting-started.md",
    "docs/cli.md",
    "docs/sdk.md",
    "docs/hosts.md",
    "docs/dashboard.md",
    "docs/scaling.md",
)
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.S | re.M)
MARK = re.compile(r"<!-- (file|excerpt|background|set-up|output)(?::\s*(.*?))? -->\s*$")
FILE_LINE = re.compile(r"# (machines/\S+\.py)$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    text: str
    mark: str | None = None
    arg: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file(self) -> str | None:
        """The workspace file this block is the text of, if it is one."""
        if self.mark == "file":
            return self.arg
        first = self.text.split("\n", 1)[0]
        found = FILE_LINE.match(first) if self.lang == "python" else None
        return found.group(1) if found else None


def blocks(page: str) -> list[Block]:
    """The page's fenced blocks in order, with the mark above each."""
    text = (REPO / page).read_text()
    found = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        line = text.count("\n", 0, fence.start()) + 1
        lang, body = fence.group(1), fence.group(2)
        found.append(Block(page, line, lang, body, mark and mark.group(1), mark and mark.group(2)))
    return found


def excerpt_missing(block: Block) -> list[str]:
    """The excerpt's lines not found, in order, in the file it names (none when all are)."""
    assert block.arg is not None, f"{block.where}: an excerpt names its file"
    lines = [line.rstrip() for line in (REPO / block.arg).read_text().splitlines()]
    at, missing = 0, []
    for wanted in (line.rstrip() for line in block.text.splitlines()):
        if not wanted.strip() or wanted.strip() in ("...", "...,"):
            continue
        try:
            at = lines.index(wanted, at) + 1
        except ValueError:
            missing.append(wanted)
    return missing


RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{8,16}\b")
"""A run's (or a suite's, a conversation's, a training's) id: a sample's id stands for any."""


def output_missing(sample: Block, output: str) -> list[str]:
    """The lines of an ``output`` sample that do not come out of ``output``, in order (none when all do)."""
    got = [RUN_ID.sub("ID", line.rstrip()) for line in output.splitlines()]
    at, missing = 0, []
    for wanted in (RUN_ID.sub("ID", line.rstrip()) for line in sample.text.splitlines()):
        if not wanted.strip() or wanted.strip() == "...":
            continue
        pattern = re.compile(".*?".join(re.escape(part) for part in wanted.split("...")))
        found = next((i for i in range(at, len(got)) if pattern.fullmatch(got[i])), None)
        if found is None:
            missing.append(wanted)
        else:
            at = found + 1
    return missing


@dataclass
class Outcome:
    """What running a block did: its output, and each command of an sh block that exited non-zero."""

    block: Block
    output: str
    failed: list[tuple[int, str]]
    returncode: int

    def describe(self) -> str:
        return f"{self.block.where} ({self.block.lang}) exited {self.returncode}:\n{self.output[-3000:]}"
