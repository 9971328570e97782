"""Confinement is by what a path is, never by how its string starts: a sandbox ``run-1`` beside ``run-10``
(and ``b`` beside ``bc``) reaches nothing of its neighbour, whether through ``..`` in any position, an
absolute path, a symlink, or a folder swapped for a symlink between the resolve and the open. Each case
would pass a check by string prefix (``str(path).startswith(str(root))``), so each fails under one.
Real folders and symlinks; no bubblewrap needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from machine import Tool, ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox, SandboxEscape
from machine.sandboxes.tools import FILE_TOOLS, edit_file, list_files, read_file, search_files, write_file
from machine.sandboxes.tools._paths import _opened_inside, _read_inside, _resolve, _write_inside

SECRET = b"NEIGHBOUR SECRET\n"
PAIRS = [("run-1", "run-10"), ("b", "bc"), ("run-1", "run-1.old"), ("run-1", "run-1 copy")]
"""A sandbox and a neighbour whose name starts with the sandbox's name."""


@pytest.fixture(params=PAIRS, ids=lambda pair: f"{pair[0]}-vs-{pair[1]}")
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[LocalSandbox, Path]:
    """A sandbox and, beside it, a neighbour folder named with the sandbox's name as a prefix."""
    mine, theirs = request.param
    box = LocalSandbox.create(tmp_path / "sandboxes", mine, {"sub/own.txt": "mine\n"}, isolate=False)
    neighbour = tmp_path / "sandboxes" / theirs
    (neighbour / "d").mkdir(parents=True)
    (neighbour / "secret.txt").write_bytes(SECRET)
    (neighbour / "d" / "secret.txt").write_bytes(SECRET)
    assert str(neighbour).startswith(str(box.path))  # what makes a string-prefix check pass
    return box, neighbour


def _dotdot_paths(name: str) -> list[str]:
    """``..`` in every position of a path to the neighbour's secret: first, after a folder, repeated, after
    ``.``, in the middle of a longer walk, with doubled and trailing slashes, behind ``/work``."""
    return [
        f"../{name}/secret.txt",
        f"../{name}",
        f"../{name}/",
        f"../{name}/d/secret.txt",
        f"./../{name}/secret.txt",
        f"sub/../../{name}/secret.txt",
        f"sub/./../../{name}/secret.txt",
        f"sub//..//..//{name}//secret.txt",
        f"sub/../sub/../../{name}/secret.txt",
        f"not-there/../../{name}/secret.txt",
        f"../{name}/d/../secret.txt",
        f"../../sandboxes/{name}/secret.txt",
        f"/work/../{name}/secret.txt",
        f"/work/sub/../../{name}/secret.txt",
    ]


def test_dotdot_anywhere_never_reaches_a_neighbour_named_with_the_same_prefix(
    pair: tuple[LocalSandbox, Path],
) -> None:
    box, neighbour = pair
    for path in _dotdot_paths(neighbour.name):
        with pytest.raises(SandboxEscape, match="leads outside the working directory"):
            box.resolve(path)


def test_absolute_paths_are_refused_even_to_the_sandbox_itself(pair: tuple[LocalSandbox, Path]) -> None:
    box, neighbour = pair
    for path in (str(neighbour / "secret.txt"), str(neighbour), str(box.path / "sub" / "own.txt"), "/etc"):
        with pytest.raises(SandboxEscape, match="is an absolute path"):
            box.resolve(path)


def test_symlinks_into_a_neighbour_named_with_the_same_prefix_are_refused(
    pair: tuple[LocalSandbox, Path],
) -> None:
    box, neighbour = pair
    os.symlink(f"../{neighbour.name}", box.path / "rel-link")
    os.symlink(neighbour, box.path / "abs-link")
    os.symlink(neighbour / "secret.txt", box.path / "file-link")
    os.symlink(f"../../{neighbour.name}/d", box.path / "sub" / "deep-link")
    os.symlink("rel-link", box.path / "chain")
    for path in (
        "rel-link",
        "rel-link/secret.txt",
        "abs-link/d/secret.txt",
        "file-link",
        "sub/deep-link/secret.txt",
        "chain/secret.txt",
        "/work/abs-link",
    ):
        with pytest.raises(SandboxEscape, match="leads outside"):
            box.resolve(path)


def test_the_sandbox_and_what_is_inside_it_still_resolve(pair: tuple[LocalSandbox, Path]) -> None:
    """The refusals above are not everything refused: the root itself, its own files, and a link that
    leaves and comes back in are allowed."""
    box, neighbour = pair
    os.symlink(f"../{box.path.name}/sub/own.txt", box.path / "round-trip")
    assert box.resolve(".") == box.path
    assert box.resolve("sub/..") == box.path
    assert box.resolve(f"../{box.path.name}/sub/own.txt") == box.path / "sub" / "own.txt"
    assert box.resolve("round-trip") == box.path / "sub" / "own.txt"
    assert box.display(box.path / "sub" / "own.txt") == "sub/own.txt"
    with pytest.raises(ValueError):
        box.display(neighbour / "secret.txt")


@pytest.mark.parametrize("tool", FILE_TOOLS, ids=lambda t: t.name)
async def test_no_file_tool_reaches_the_neighbour(tool: Tool, pair: tuple[LocalSandbox, Path]) -> None:
    box, neighbour = pair
    os.symlink(neighbour, box.path / "link")
    ctx = ToolContext(run_id="r", sandbox=box)
    arguments = {
        search_files.name: {"pattern": "SECRET"},
        write_file.name: {"content": "overwritten"},
        edit_file.name: {"old": "NEIGHBOUR", "new": "changed"},
    }.get(tool.name, {})
    for path in (f"../{neighbour.name}/secret.txt", f"../{neighbour.name}", "link/secret.txt", "link"):
        with pytest.raises(ToolFailure, match="inside the working directory") as refused:
            await tool.invoke({**arguments, "path": path}, ctx)
        assert "NEIGHBOUR SECRET" not in str(refused.value)
    assert (neighbour / "secret.txt").read_bytes() == SECRET
    assert sorted(p.name for p in neighbour.iterdir()) == ["d", "secret.txt"]


async def test_listing_the_parent_is_refused_so_the_neighbour_is_never_named(
    pair: tuple[LocalSandbox, Path],
) -> None:
    box, neighbour = pair
    ctx = ToolContext(run_id="r", sandbox=box)
    with pytest.raises(ToolFailure) as refused:
        await list_files.invoke({"path": ".."}, ctx)
    assert neighbour.name not in str(refused.value).replace(f"{box.path.name!r}", "")
    assert "inside the working directory" in str(refused.value)


def test_a_folder_swapped_for_a_link_into_the_neighbour_is_caught_at_the_open(
    pair: tuple[LocalSandbox, Path],
) -> None:
    """The path resolved while ``d`` was the sandbox's own folder; then ``d`` became a link to the
    neighbour. The kernel's name for the opened file (``.../run-10/d/secret.txt``) starts with the
    sandbox's path as a string, and is still outside."""
    box, neighbour = pair
    (box.path / "d" / "d").mkdir(parents=True)
    target = box.resolve("d/d/secret.txt")
    created = box.resolve("d/d/new.txt")
    direct = box.resolve("d/secret.txt")
    (box.path / "d" / "d").rmdir()
    (box.path / "d").rmdir()
    os.symlink(f"../{neighbour.name}", box.path / "d")
    for read in (target, direct):
        with pytest.raises(ToolFailure, match="outside the working directory"):
            _read_inside(box, read)
    for written in (target, created):
        with pytest.raises(ToolFailure, match="outside the working directory"):
            _write_inside(box, written, b"overwritten")
    with pytest.raises(OSError):  # the file's own folder is the link: never followed
        _write_inside(box, direct, b"overwritten")
    assert (neighbour / "secret.txt").read_bytes() == SECRET
    assert (neighbour / "d" / "secret.txt").read_bytes() == SECRET
    assert sorted(p.name for p in (neighbour / "d").iterdir()) == ["secret.txt"]


def test_the_open_check_names_the_real_file(pair: tuple[LocalSandbox, Path]) -> None:
    """``_opened_inside`` on descriptors: the root and files inside are inside; the neighbour, its files
    and the folder above are not."""
    box, neighbour = pair
    inside = [box.path, box.path / "sub", box.path / "sub" / "own.txt"]
    outside = [neighbour, neighbour / "secret.txt", neighbour / "d", box.path.parent, Path("/")]
    for path, expected in [(p, True) for p in inside] + [(p, False) for p in outside]:
        fd = os.open(path, os.O_RDONLY)
        try:
            assert _opened_inside(box, fd) is expected, path
        finally:
            os.close(fd)


def test_files_inside_are_read_and_written_through_the_checked_open(pair: tuple[LocalSandbox, Path]) -> None:
    box, _ = pair
    assert _read_inside(box, box.resolve("sub/own.txt")) == b"mine\n"
    _write_inside(box, box.resolve("sub/new/made.txt"), b"made\n")
    assert (box.path / "sub" / "new" / "made.txt").read_bytes() == b"made\n"
    _write_inside(box, box.resolve("sub/own.txt"), b"short")  # truncated, not appended
    assert (box.path / "sub" / "own.txt").read_bytes() == b"short"


def test_the_tools_resolver_refuses_with_what_to_do(pair: tuple[LocalSandbox, Path]) -> None:
    box, neighbour = pair
    with pytest.raises(ToolFailure) as refused:
        _resolve(box, f"../{neighbour.name}/secret.txt")
    message = str(refused.value)
    assert message.startswith(f"refused '../{neighbour.name}/secret.txt': paths must stay inside")
    assert "give a relative path such as 'src/main.py'" in message
    assert _resolve(box, "sub/own.txt") == box.path / "sub" / "own.txt"


async def test_read_file_reads_inside_and_refuses_the_neighbour(pair: tuple[LocalSandbox, Path]) -> None:
    box, neighbour = pair
    ctx = ToolContext(run_id="r", sandbox=box)
    assert "mine" in await read_file.invoke({"path": "sub/own.txt"}, ctx)
    with pytest.raises(ToolFailure, match="inside the working directory"):
        await read_file.invoke({"path": f"/work/../{neighbour.name}/secret.txt"}, ctx)


def test_the_resolvers_refusals_say_what_is_wrong(pair: tuple[LocalSandbox, Path]) -> None:
    box, neighbour = pair
    with pytest.raises(SandboxEscape) as absolute:
        box.resolve(str(neighbour))
    assert str(absolute.value) == (
        f"{str(neighbour)!r} is an absolute path outside /work: give a path inside the working directory"
    )
    os.symlink("loop-b", box.path / "loop-a")
    os.symlink("loop-a", box.path / "loop-b")
    with pytest.raises(SandboxEscape) as loop:
        box.resolve("loop-a/x")
    assert str(loop.value).startswith("'loop-a/x' cannot be resolved: ")


def test_the_commands_path_keeps_every_character_of_the_name(pair: tuple[LocalSandbox, Path]) -> None:
    """``/work/`` is cut off exactly: names starting with characters of it stay whole."""
    box, _ = pair
    for name in ("XX.txt", "w.txt", "/k.txt", "work", "-x"):
        assert box.resolve(f"/work/{name}") == box.path / name.lstrip("/")
    assert box.resolve("/work//sub/own.txt") == box.path / "sub" / "own.txt"
