"""The file tools' path helpers beyond confinement (that is test_confinement.py): the exact words of a
refusal and of a not-found error, and how a file is created, truncated and refused when it is not a
regular file. Real folders, FIFOs and file modes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from machine import ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import read_file
from machine.sandboxes.tools._paths import _missing, _read_inside, _resolve, _sandbox, _shown, _write_inside


@pytest.fixture
def box(tmp_path: Path) -> LocalSandbox:
    return LocalSandbox.create(tmp_path / "sandboxes", "run-1", isolate=False)


@pytest.fixture
def umask_022() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


async def test_a_run_without_a_working_directory_is_told_so() -> None:
    ctx = ToolContext(run_id="r")
    with pytest.raises(ToolFailure) as refused:
        _sandbox(ctx)
    assert str(refused.value) == "this tool acts in the run's working directory, and this run has none"
    with pytest.raises(ToolFailure, match=r"^this tool acts in the run's working directory"):
        await read_file.invoke({"path": "a.txt"}, ctx)


def test_a_refusal_ends_with_what_to_give_instead(box: LocalSandbox) -> None:
    with pytest.raises(ToolFailure) as refused:
        _resolve(box, "../x")
    assert str(refused.value) == (
        "refused '../x': paths must stay inside the working directory ('../x' leads outside the working "
        "directory); give a relative path such as 'src/main.py'"
    )


def test_paths_are_shown_relative_to_the_working_directory(box: LocalSandbox) -> None:
    assert _shown(box, box.path) == "."
    assert _shown(box, box.path / "src" / "app.py") == "src/app.py"


def test_not_found_at_the_root_suggests_three_close_names_and_lists_thirty(box: LocalSandbox) -> None:
    names = ["notes.txt", "notes.md", "note.txt", "notes.rst", *(f"f{i:02}" for i in range(28))]
    for name in names:
        (box.path / name).write_text("x")
    (box.path / "Adir").mkdir()
    os.symlink("Adir", box.path / "Alink")  # a link to a folder is listed as a name, not followed
    message = str(_missing(box, box.path / "notes.tx", "notes.tx"))
    listed = sorted([*names, "Adir", "Alink"])
    shown = [name + "/" if name == "Adir" else name for name in listed[:30]]
    assert shown[:2] == ["Adir/", "Alink"]
    assert message == (
        "'notes.tx' does not exist. Did you mean 'notes.txt' or 'note.txt' or 'notes.rst'? "
        f"the working directory holds: {', '.join(shown)} and {len(listed) - 30} more."
    )


def test_not_found_in_a_folder_names_that_folder_and_lists_all_of_thirty(box: LocalSandbox) -> None:
    (box.path / "src").mkdir()
    names = [f"m{i:02}.py" for i in range(30)]
    for name in names:
        (box.path / "src" / name).write_text("x")
    message = str(_missing(box, box.path / "src" / "deep" / "zzz.txt", "src/deep/zzz.txt"))
    assert message == f"'src/deep/zzz.txt' does not exist. src/ holds: {', '.join(names)}."


def test_not_found_in_an_empty_folder_says_it_is_empty(box: LocalSandbox) -> None:
    empty_root = "'a.txt' does not exist. the working directory is empty."
    assert str(_missing(box, box.path / "a.txt", "a.txt")) == empty_root
    (box.path / "empty").mkdir()
    assert str(_missing(box, box.path / "empty" / "a.txt", "empty/a.txt")) == (
        "'empty/a.txt' does not exist. empty/ is empty."
    )


def test_a_written_file_is_created_readable_not_executable(box: LocalSandbox, umask_022: None) -> None:
    target = box.resolve("made/new.txt")
    _write_inside(box, target, b"made\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert target.read_bytes() == b"made\n"


def test_writing_replaces_the_whole_file(box: LocalSandbox) -> None:
    target = box.resolve("long.txt")
    target.write_bytes(b"a much longer first version\n")
    _write_inside(box, target, b"ab")
    assert target.read_bytes() == b"ab"
    _write_inside(box, target, b"")
    assert target.read_bytes() == b""
    assert _read_inside(box, target) == b""


def test_a_pipe_with_a_reader_is_refused_for_writing_and_reading(box: LocalSandbox) -> None:
    """A FIFO that another process holds open opens for writing without blocking; it is still not a file."""
    pipe = box.path / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(ToolFailure, match=r"^'pipe' is not a regular file"):
            _write_inside(box, pipe, b"into the pipe")
        with pytest.raises(ToolFailure, match=r"^'pipe' is not a regular file"):
            _read_inside(box, pipe)
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


def test_thirty_one_names_list_thirty_and_one_more(box: LocalSandbox) -> None:
    names = [f"n{i:02}" for i in range(31)]
    for name in names:
        (box.path / name).write_text("x")
    message = str(_missing(box, box.path / "zzz", "zzz"))
    listed = ", ".join(names[:30])
    assert message == f"'zzz' does not exist. the working directory holds: {listed} and 1 more."
