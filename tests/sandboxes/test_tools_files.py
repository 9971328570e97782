"""The file tools on a real sandbox directory: listing, searching, reading, writing, editing, and
every way a path could lead outside the run's directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from machine import Tool, ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import (
    FILE_TOOLS,
    edit_file,
    list_files,
    read_file,
    search_files,
    write_file,
)
from machine.sandboxes.tools.files import MAX_LIST_ENTRIES, MAX_MATCHES

FILES = {
    "README.md": "# Demo\nA small project.\n",
    "src/app.py": "def main():\n    print('hello')\n\n\ndef helper():\n    return 42\n",
    "src/util.py": "VALUE = 1\n# TODO: more\n",
    "tests/test_app.py": "from src.app import main\n\n\ndef test_main():\n    main()\n",
    ".env.example": "KEY=value\n",
}


@pytest.fixture
def sandbox(tmp_path: Path) -> LocalSandbox:
    return LocalSandbox.create(tmp_path / "sandboxes", "r1", FILES)


def ctx(sandbox: LocalSandbox) -> ToolContext:
    return ToolContext(run_id="r1", sandbox=sandbox)


async def call(tool: Tool, sandbox: LocalSandbox, **arguments: Any) -> str:
    return await tool.invoke(arguments, ctx(sandbox))


async def refused(tool: Tool, sandbox: LocalSandbox, **arguments: Any) -> str:
    with pytest.raises(ToolFailure) as caught:
        await call(tool, sandbox, **arguments)
    return str(caught.value)


# ------------------------------------------------------------------------------------ escapes


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the sandbox, with a secret the model must not reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return folder


def _escapes(sandbox: LocalSandbox, outside: Path) -> list[str]:
    """Every escape form, the symlinks made as the model would make them (inside the directory)."""
    os.symlink(outside, sandbox.path / "link_out")
    os.symlink(outside / "secret.txt", sandbox.path / "secret_link.txt")
    (sandbox.path / "sub" / "deeper").mkdir(parents=True)
    os.symlink("../../..", sandbox.path / "sub" / "deeper" / "up")
    return [
        "../x",
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "/etc/passwd",
        str(outside / "secret.txt"),
        "link_out/secret.txt",
        "link_out",
        "secret_link.txt",
        "sub/deeper/up/outside/secret.txt",
    ]


def _arguments(tool: Tool, path: str) -> dict[str, Any]:
    if tool is search_files:
        return {"pattern": "SECRET", "path": path}
    if tool is write_file:
        return {"path": path, "content": "overwritten"}
    if tool is edit_file:
        return {"path": path, "old": "TOP SECRET", "new": "changed"}
    return {"path": path}


@pytest.mark.parametrize("tool", FILE_TOOLS, ids=lambda t: t.name)
async def test_every_escape_form_is_refused(tool: Tool, sandbox: LocalSandbox, outside: Path) -> None:
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    for path in _escapes(sandbox, outside):
        message = await refused(tool, sandbox, **_arguments(tool, path))
        assert "inside the working directory" in message, (path, message)
        assert "TOP SECRET" not in message
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_writing_through_a_symlinked_folder_creates_nothing_outside(
    sandbox: LocalSandbox, outside: Path
) -> None:
    os.symlink(outside, sandbox.path / "out")
    await refused(write_file, sandbox, path="out/new/dropped.txt", content="x")
    assert not (outside / "new").exists()


async def test_the_tools_need_a_sandbox() -> None:
    with pytest.raises(ToolFailure, match="working directory"):
        await read_file.invoke({"path": "README.md"}, ToolContext(run_id="r1"))


async def test_the_sandbox_s_own_absolute_path_is_accepted(sandbox: LocalSandbox) -> None:
    assert "# Demo" in await call(read_file, sandbox, path="/work/README.md")


# ------------------------------------------------------------------------------------ list_files


async def test_list_files_sorted_with_folders_marked_and_nothing_hidden(sandbox: LocalSandbox) -> None:
    listing = await call(list_files, sandbox)
    assert listing.splitlines() == [
        ".env.example",
        "README.md",
        "src/",
        "src/app.py",
        "src/util.py",
        "tests/",
        "tests/test_app.py",
    ]


async def test_list_files_depth_and_subfolder(sandbox: LocalSandbox) -> None:
    (sandbox.path / "src" / "pkg" / "inner").mkdir(parents=True)
    (sandbox.path / "src" / "pkg" / "inner" / "deep.py").write_text("", encoding="utf-8")
    assert (await call(list_files, sandbox, depth=1)).splitlines() == [
        ".env.example",
        "README.md",
        "src/",
        "tests/",
    ]
    assert (await call(list_files, sandbox, path="src", depth=3)).splitlines() == [
        "src/app.py",
        "src/pkg/",
        "src/pkg/inner/",
        "src/pkg/inner/deep.py",
        "src/util.py",
    ]
    message = await refused(list_files, sandbox, depth=0)
    assert "depth" in message


async def test_list_files_shows_symlinks_without_following_them(sandbox: LocalSandbox, outside: Path) -> None:
    os.symlink(outside, sandbox.path / "link_out")
    listing = await call(list_files, sandbox, depth=3)
    assert f"link_out -> {outside}" in listing.splitlines()
    assert "secret.txt" not in listing


async def test_list_files_is_bounded_with_a_note(sandbox: LocalSandbox) -> None:
    many = sandbox.path / "many"
    many.mkdir()
    for i in range(MAX_LIST_ENTRIES + 20):
        (many / f"f{i:04}.txt").write_text("", encoding="utf-8")
    lines = (await call(list_files, sandbox, path="many")).splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[0] == "many/f0000.txt"
    assert "cut at 500 entries" in lines[-1]


async def test_list_files_missing_folder_lists_what_is_near(sandbox: LocalSandbox) -> None:
    message = await refused(list_files, sandbox, path="scr")
    assert "'scr' does not exist" in message
    assert "Did you mean 'src'" in message


async def test_list_files_empty_folder(sandbox: LocalSandbox) -> None:
    (sandbox.path / "empty").mkdir()
    assert await call(list_files, sandbox, path="empty") == "(empty folder)"


# ------------------------------------------------------------------------------------ search_files


async def test_search_files_reports_file_and_line(sandbox: LocalSandbox) -> None:
    found = await call(search_files, sandbox, pattern=r"def \w+\(")
    assert found.splitlines() == [
        "src/app.py:1: def main():",
        "src/app.py:5: def helper():",
        "tests/test_app.py:4: def test_main():",
    ]


async def test_search_files_glob_and_path(sandbox: LocalSandbox) -> None:
    assert (await call(search_files, sandbox, pattern="main", glob="test_*.py")).splitlines() == [
        "tests/test_app.py:1: from src.app import main",
        "tests/test_app.py:4: def test_main():",
        "tests/test_app.py:5: main()",
    ]
    assert (await call(search_files, sandbox, pattern="TODO", path="src")).splitlines() == [
        "src/util.py:2: # TODO: more"
    ]
    assert (await call(search_files, sandbox, pattern="TODO", glob="src/**/*.py")).splitlines() == [
        "src/util.py:2: # TODO: more"
    ]
    assert "no matches" in await call(search_files, sandbox, pattern="TODO", glob="*.md")


async def test_search_files_invalid_regex_names_the_problem(sandbox: LocalSandbox) -> None:
    message = await refused(search_files, sandbox, pattern="def (")
    assert "invalid regular expression 'def ('" in message
    assert "missing )" in message


async def test_search_files_skips_binary_files(sandbox: LocalSandbox) -> None:
    (sandbox.path / "blob.bin").write_bytes(b"\x00\x01needle\x00")
    (sandbox.path / "notes.txt").write_text("a needle here\n", encoding="utf-8")
    found = (await call(search_files, sandbox, pattern="needle")).splitlines()
    assert found == ["notes.txt:1: a needle here", "[1 binary file skipped]"]


async def test_search_files_is_bounded_with_a_note(sandbox: LocalSandbox) -> None:
    (sandbox.path / "big.txt").write_text("match\n" * (MAX_MATCHES + 50), encoding="utf-8")
    lines = (await call(search_files, sandbox, pattern="^match$")).splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[-2] == f"big.txt:{MAX_MATCHES}: match"
    assert "stopped at 200 matches" in lines[-1]


async def test_search_files_does_not_follow_symlinks(sandbox: LocalSandbox, outside: Path) -> None:
    os.symlink(outside, sandbox.path / "link_out")
    os.symlink(outside / "secret.txt", sandbox.path / "secret_link.txt")
    assert "no matches" in await call(search_files, sandbox, pattern="SECRET")


# ------------------------------------------------------------------------------------ read_file


async def test_read_file_numbers_lines(sandbox: LocalSandbox) -> None:
    text = await call(read_file, sandbox, path="src/util.py")
    assert text == "     1\tVALUE = 1\n     2\t# TODO: more"


async def test_read_file_pages_long_files_with_a_note(sandbox: LocalSandbox) -> None:
    (sandbox.path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)), encoding="utf-8")
    first = (await call(read_file, sandbox, path="long.txt", limit=40)).splitlines()
    assert first[0] == "     1\tline 1"
    assert first[39] == "    40\tline 40"
    assert first[-1] == "[lines 1-40 of 100; call read_file with offset=40 to read on]"
    second = (await call(read_file, sandbox, path="long.txt", offset=40, limit=40)).splitlines()
    assert second[0] == "    41\tline 41"
    assert "offset=80" in second[-1]
    last = (await call(read_file, sandbox, path="long.txt", offset=80)).splitlines()
    assert last[-1] == "   100\tline 100"
    assert "past the end" in await refused(read_file, sandbox, path="long.txt", offset=100)


async def test_read_file_missing_lists_what_is_near(sandbox: LocalSandbox) -> None:
    message = await refused(read_file, sandbox, path="src/ap.py")
    assert "'src/ap.py' does not exist" in message
    assert "Did you mean 'src/app.py'" in message
    assert "app.py, util.py" in message
    message = await refused(read_file, sandbox, path="nowhere/x.py")
    assert "the working directory holds" in message
    assert "src/" in message


async def test_read_file_refuses_folders_and_binary_files(sandbox: LocalSandbox) -> None:
    assert "is a folder" in await refused(read_file, sandbox, path="src")
    (sandbox.path / "image.png").write_bytes(b"\x89PNG\x00\x00")
    assert "binary" in await refused(read_file, sandbox, path="image.png")


async def test_read_file_cuts_very_long_lines(sandbox: LocalSandbox) -> None:
    (sandbox.path / "wide.txt").write_text("x" * 5000 + "\nshort\n", encoding="utf-8")
    text = await call(read_file, sandbox, path="wide.txt")
    assert "[line cut]" in text
    assert "     2\tshort" in text
    assert len(text) < 2500


# ------------------------------------------------------------------------------------ write_file


async def test_write_file_creates_folders_and_reports_bytes(sandbox: LocalSandbox) -> None:
    result = await call(write_file, sandbox, path="new/deep/file.txt", content="héllo\n")
    assert result == "wrote 7 bytes to new/deep/file.txt (new file)"
    assert (sandbox.path / "new/deep/file.txt").read_bytes() == "héllo\n".encode()
    result = await call(write_file, sandbox, path="new/deep/file.txt", content="")
    assert result == "wrote 0 bytes to new/deep/file.txt (replaced it)"


async def test_write_file_refuses_a_folder(sandbox: LocalSandbox) -> None:
    assert "is a folder" in await refused(write_file, sandbox, path="src", content="x")


# ------------------------------------------------------------------------------------ edit_file


async def test_edit_file_replaces_exactly_one_occurrence(sandbox: LocalSandbox) -> None:
    result = await call(edit_file, sandbox, path="src/app.py", old="return 42", new="return 43")
    assert result.startswith("replaced 1 occurrence in src/app.py at line 6")
    assert (sandbox.path / "src/app.py").read_text(encoding="utf-8").endswith("    return 43\n")


async def test_edit_file_with_no_match_changes_nothing(sandbox: LocalSandbox) -> None:
    before = (sandbox.path / "src/app.py").read_bytes()
    message = await refused(edit_file, sandbox, path="src/app.py", old="return 99", new="return 0")
    assert "not found" in message
    assert "nothing was changed" in message
    assert (sandbox.path / "src/app.py").read_bytes() == before


async def test_edit_file_with_two_matches_changes_nothing_and_says_where(sandbox: LocalSandbox) -> None:
    before = (sandbox.path / "src/app.py").read_bytes()
    message = await refused(edit_file, sandbox, path="src/app.py", old="def ", new="async def ")
    assert "occurs 2 times" in message
    assert "lines 1, 5" in message
    assert "nothing was changed" in message
    assert (sandbox.path / "src/app.py").read_bytes() == before


async def test_edit_file_counts_overlapping_matches(sandbox: LocalSandbox) -> None:
    (sandbox.path / "a.txt").write_bytes(b"aaa\n")
    message = await refused(edit_file, sandbox, path="a.txt", old="aa", new="b")
    assert "occurs 2 times" in message
    assert "(line 1)" in message
    assert (sandbox.path / "a.txt").read_bytes() == b"aaa\n"


async def test_edit_file_keeps_every_other_byte(sandbox: LocalSandbox) -> None:
    data = b"first\r\nsecond \xff\xfe raw\r\nthird\r\n"
    (sandbox.path / "crlf.txt").write_bytes(data)
    await call(edit_file, sandbox, path="crlf.txt", old="first\nsecond", new="1st\nsecond")
    assert (sandbox.path / "crlf.txt").read_bytes() == b"1st\r\nsecond \xff\xfe raw\r\nthird\r\n"


async def test_edit_file_refuses_empty_old_and_missing_files(sandbox: LocalSandbox) -> None:
    assert "old is empty" in await refused(edit_file, sandbox, path="src/app.py", old="", new="x")
    assert "does not exist" in await refused(edit_file, sandbox, path="src/nope.py", old="a", new="b")


# ------------------------------------------------------------------------------------ races


def test_a_folder_swapped_for_a_symlink_after_resolving_is_refused(
    sandbox: LocalSandbox, outside: Path
) -> None:
    """What a command running at the same time could do: the path was resolved while ``d`` was a
    folder inside; by the time of the open, ``d`` leads outside. The open itself is checked."""
    from machine.sandboxes.tools._paths import _read_inside, _write_inside

    (outside / "e").mkdir()
    (outside / "e" / "secret.txt").write_bytes(b"TOP SECRET\n")
    (sandbox.path / "d" / "e").mkdir(parents=True)
    deep = sandbox.resolve("d/e/secret.txt")  # resolved while d/ was a real folder
    shallow = sandbox.resolve("d/secret.txt")
    plain = sandbox.resolve("plain.txt")
    (sandbox.path / "d" / "e").rmdir()
    (sandbox.path / "d").rmdir()
    os.symlink(outside, sandbox.path / "d")
    os.symlink(outside / "secret.txt", plain)

    for target in (deep, shallow):
        with pytest.raises(ToolFailure, match="outside the working directory"):
            _read_inside(sandbox, target)
    with pytest.raises(ToolFailure, match="outside the working directory"):
        _write_inside(sandbox, deep, b"overwritten")
    with pytest.raises(OSError):  # the file's own folder swapped: the symlink is not followed
        _write_inside(sandbox, sandbox.path / "d" / "new.txt", b"dropped")
    with pytest.raises(OSError):  # the file itself swapped for a symlink: not followed either
        _read_inside(sandbox, plain)
    with pytest.raises(OSError):
        _write_inside(sandbox, plain, b"overwritten")
    assert (outside / "secret.txt").read_bytes() == b"TOP SECRET\n"
    assert (outside / "e" / "secret.txt").read_bytes() == b"TOP SECRET\n"
    assert sorted(p.name for p in outside.iterdir()) == ["e", "secret.txt"]


async def test_pipes_do_not_block_the_tools(sandbox: LocalSandbox) -> None:
    os.mkfifo(sandbox.path / "pipe")
    assert "not a regular file" in await refused(read_file, sandbox, path="pipe")
    assert "not a regular file" in await refused(edit_file, sandbox, path="pipe", old="a", new="b")
    with pytest.raises(ToolFailure):
        await call(write_file, sandbox, path="pipe", content="x")
    assert "no matches" in await call(search_files, sandbox, pattern="x", glob="pipe")


async def test_listing_and_searching_skip_hidden_folders(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tooling" / ".machine" / "sandboxes").mkdir(parents=True)
    (project / "tooling" / ".machine" / "sandboxes" / "kept.py").write_text("SECRET_MARK = 1\n")
    (project / "app.py").write_text("SECRET_MARK = 2\n")
    sandbox = LocalSandbox(project, hide=["tooling/.machine"])
    ctx = ToolContext(run_id="r1", sandbox=sandbox)
    listing = await list_files.invoke({"path": ".", "depth": 5}, ctx)
    assert "tooling/" in listing and ".machine" not in listing
    found = await search_files.invoke({"pattern": "SECRET_MARK"}, ctx)
    assert "app.py" in found and "kept.py" not in found
