"""The file tools keep to their limits whatever the model gives them: an evil regular expression or
glob, a 1 GiB one-line file, a file too large to edit, a folder of many entries. Each hostile input is
built here; each test asserts the bound (event loop gap, memory, time to cancel, the message)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.loop import loop_gaps

from machine import Tool, ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import _search, edit_file, read_file, search_files
from machine.sandboxes.tools.files import MAX_EDIT_BYTES, MAX_LINE_CHARS, MAX_READ_CHARS

MAX_GAP_S = 0.2
"""The longest the event loop may go without the ticker: generous, for a 2-core machine under load (the
scheduler alone can hold the ticker back ~100 ms there); without these bounds the gaps are seconds.
benchmarks/tool_bounds.py prints the figure against its 50 ms target."""
EVIL = r"(x+x+)+y"
"""Exponential backtracking on a line of x's: each x more doubles the time (26 of them: seconds)."""
GIB = 1 << 30


@pytest.fixture
def sandbox(tmp_path: Path) -> LocalSandbox:
    return LocalSandbox.create(tmp_path / "sandboxes", "r1", {"ok.txt": "fine\n"})


async def call(tool: Tool, sandbox: LocalSandbox, **arguments: Any) -> str:
    return await tool.invoke(arguments, ToolContext(run_id="r1", sandbox=sandbox))


def workers() -> list[int]:
    """The matching processes this test process has running now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            line = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"_search_worker" in line:
            found.append(int(entry.name))
    return found


# ------------------------------------------------------------------------------------ search_files


async def test_an_evil_regex_stops_at_the_time_limit_and_never_holds_the_loop(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "SEARCH_SECONDS", 1.0)
    (sandbox.path / "evil.txt").write_text("x" * 26 + "\n", encoding="utf-8")
    started = time.monotonic()
    async with loop_gaps() as gaps:
        result = await call(search_files, sandbox, pattern=EVIL)
    assert time.monotonic() - started < 2.5
    assert gaps.longest < MAX_GAP_S, f"the event loop was held {gaps.longest * 1000:.0f} ms"
    assert result.splitlines()[-1] == "[search stopped after 1 s: narrow the pattern, path or glob]"
    assert workers() == []


async def test_cancelling_an_evil_search_returns_at_once_and_kills_the_matcher(sandbox: LocalSandbox) -> None:
    (sandbox.path / "evil.txt").write_text("x" * 28 + "\n", encoding="utf-8")
    async with loop_gaps() as gaps:
        started = time.monotonic()
        with anyio.move_on_after(0.5):
            await call(search_files, sandbox, pattern=EVIL)
        returned = time.monotonic() - started
        seen = workers()
    assert returned < 1.0, f"the cancelled call took {returned:.1f} s to return"
    assert gaps.longest < MAX_GAP_S
    assert seen == [], "the matching process outlived the cancelled call"


async def test_an_evil_glob_is_bounded_too(sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """A glob is a regular expression as well: '*a' twenty times against a long name of a's."""
    monkeypatch.setattr(_search, "SEARCH_SECONDS", 1.0)
    (sandbox.path / ("a" * 200)).write_text("needle\n", encoding="utf-8")
    async with loop_gaps() as gaps:
        result = await call(search_files, sandbox, pattern="needle", glob="*a" * 20 + "*b")
    assert gaps.longest < MAX_GAP_S
    assert "search stopped after 1 s" in result


async def test_the_search_keeps_its_match_limit_and_errors(sandbox: LocalSandbox) -> None:
    (sandbox.path / "many.txt").write_text("hit\n" * 500, encoding="utf-8")
    lines = (await call(search_files, sandbox, pattern="^hit$", path="many.txt")).splitlines()
    assert len(lines) == 201 and lines[-1].startswith("[stopped at 200 matches")
    with pytest.raises(ToolFailure, match=r"invalid glob '\[z-a\]'"):
        await call(search_files, sandbox, pattern="x", glob="[z-a]")
    assert workers() == []


# ------------------------------------------------------------------------------------ read_file


def _one_line_gib(path: Path) -> None:
    """A 1 GiB file of one line: text at the start, then a hole (costs no disk)."""
    with path.open("wb") as handle:
        handle.write(b"x" * 100_000)
        handle.truncate(GIB)
    assert path.stat().st_size == GIB


@pytest.mark.slow
async def test_a_one_line_gib_file_costs_memory_in_proportion_to_the_limit(sandbox: LocalSandbox) -> None:
    _one_line_gib(sandbox.path / "huge.txt")
    tracemalloc.start()
    try:
        async with loop_gaps() as gaps:
            text = await call(read_file, sandbox, path="huge.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_READ_CHARS + 256 * 1024, f"peak {peak:,} bytes for a 1 GiB line"
    assert gaps.longest < MAX_GAP_S
    first, note = text.split("\n", 1)
    assert first == "     1\t" + "x" * MAX_LINE_CHARS + " … [line cut]"
    assert note == f"[lines longer than {MAX_LINE_CHARS} characters were cut]"


async def test_read_file_pages_a_file_of_many_lines_without_reading_it_whole(sandbox: LocalSandbox) -> None:
    with (sandbox.path / "tall.txt").open("wb") as handle:
        handle.write(b"".join(b"line %d\n" % i for i in range(1, 300_001)))
    tracemalloc.start()
    try:
        text = await call(read_file, sandbox, path="tall.txt", offset=250_000, limit=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text.splitlines() == [
        "250001\tline 250001",
        "250002\tline 250002",
        "250003\tline 250003",
        "[lines 250001-250003 of 300000; call read_file with offset=250003 to read on]",
    ]
    assert peak < 1_000_000


async def test_cancelling_a_long_read_returns_at_once(sandbox: LocalSandbox) -> None:
    _one_line_gib(sandbox.path / "huge.txt")
    started = time.monotonic()
    with anyio.move_on_after(0.05):
        await call(read_file, sandbox, path="huge.txt", offset=5)
    assert time.monotonic() - started < 0.3


# ------------------------------------------------------------------------------------ edit_file


async def test_edit_file_refuses_a_file_over_its_limit_before_reading_it(sandbox: LocalSandbox) -> None:
    big = sandbox.path / "big.txt"
    with big.open("wb") as handle:
        handle.write(b"needle\n")
        handle.truncate(GIB)
    tracemalloc.start()
    try:
        with pytest.raises(ToolFailure) as caught:
            await call(edit_file, sandbox, path="big.txt", old="needle", new="pin")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"over edit_file's limit of {MAX_EDIT_BYTES:,}" in str(caught.value)
    assert "nothing was changed" in str(caught.value)
    assert peak < 1_000_000
    with big.open("rb") as handle:
        assert handle.read(7) == b"needle\n"


async def test_edit_file_with_a_snippet_everywhere_is_bounded(sandbox: LocalSandbox) -> None:
    (sandbox.path / "a.txt").write_bytes(b"a\n" * 2_000_000)
    async with loop_gaps() as gaps:
        with pytest.raises(ToolFailure, match=r"occurs 1,000 or more times .*\(lines 1, 2, 3,.* …\)"):
            await call(edit_file, sandbox, path="a.txt", old="a", new="b")
    assert gaps.longest < MAX_GAP_S


# ------------------------------------------------------------------------------------ list_files


LISTING = """
import asyncio, json, sys, tracemalloc
from pathlib import Path
from machine import ToolContext
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import list_files

sandbox = LocalSandbox.create(Path(sys.argv[1]), "r1", {})
crowd = sandbox.path / "crowd"
crowd.mkdir()
for i in range(50_000):  # read whole and sorted, these cost ~15 MB
    (crowd / f"f{i:05}").touch()
tracemalloc.start()
context = ToolContext(run_id="r1", sandbox=sandbox)
text = asyncio.run(list_files.invoke({"path": "crowd", "depth": 1}, context))
print(json.dumps({"lines": text.splitlines(), "peak": tracemalloc.get_traced_memory()[1]}))
"""
"""The listing measured in a process of its own: no other test's threads allocate while it is traced."""


@pytest.mark.slow
def test_list_files_in_a_huge_folder_keeps_only_what_it_shows(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LISTING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(done.stdout)
    lines, peak = measured["lines"], measured["peak"]
    assert lines[:2] == ["crowd/f00000", "crowd/f00001"]
    assert lines[499] == "crowd/f00499"
    assert "cut at 500 entries" in lines[-1]
    assert peak < 6_000_000, f"peak {peak:,} bytes to list 500 of 50,000 entries"
