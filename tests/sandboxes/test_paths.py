"""``resolve`` keeps every path inside the run's directory; ``display`` shows paths relative to it.
Pure file-system checks: no bubblewrap needed (the symlinks a sandboxed command makes are in
test_isolation.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from machine.errors import BadInputError
from machine.sandboxes import LocalSandbox, SandboxEscape

ESCAPES = [
    "..",
    "../x",
    "../../etc/passwd",
    "a/../../b",
    "./../x",
    "sub/../../x",
    "/etc/passwd",
    "/",
    "/tmp/x",
    "/work/../etc/passwd",
    "/workshop/x",  # looks like /work, is not
    "//etc/passwd",
    "x\x00y",
    "\x00",
    "../run-other/secret.txt",  # a sibling sandbox
]


@pytest.fixture
def box(tmp_path: Path) -> LocalSandbox:
    box = LocalSandbox.create(tmp_path / "sandboxes", "run-1", isolate=False)
    (box.path / "sub" / "deeper").mkdir(parents=True)
    (box.path / "sub" / "file.txt").write_text("inside")
    sibling = tmp_path / "sandboxes" / "run-other"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("another run's file")
    return box


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_that_lead_outside_are_refused(box: LocalSandbox, path: str) -> None:
    with pytest.raises(SandboxEscape):
        box.resolve(path)


def test_a_refusal_is_a_bad_input_error_that_names_the_path(box: LocalSandbox) -> None:
    with pytest.raises(BadInputError, match=r"'\.\./x' leads outside the working directory"):
        box.resolve("../x")
    with pytest.raises(BadInputError, match=r"'/etc/passwd' is an absolute path"):
        box.resolve("/etc/passwd")
    with pytest.raises(BadInputError, match="not a usable path"):
        box.resolve("a\x00b")


def test_a_symlink_the_model_made_pointing_out_is_refused(box: LocalSandbox) -> None:
    os.symlink("/etc", box.path / "etc-link")
    os.symlink("/etc/passwd", box.path / "passwd")
    for path in ("etc-link", "etc-link/passwd", "etc-link/../etc-link", "passwd", "./passwd", "/work/passwd"):
        with pytest.raises(SandboxEscape):
            box.resolve(path)


def test_a_symlink_in_a_subdirectory_climbing_out_is_refused(box: LocalSandbox) -> None:
    deeper = box.path / "sub" / "deeper"
    os.symlink("../../..", deeper / "up")  # the sandboxes folder, one above the run's
    os.symlink("../../../..", deeper / "way-up")
    os.symlink("../../../run-other", deeper / "neighbour")
    os.symlink("deeper/up/run-other", box.path / "sub" / "chained")  # a link through a link
    for path in (
        "sub/deeper/up",
        "sub/deeper/up/run-other/secret.txt",
        "sub/deeper/way-up/x",
        "sub/deeper/neighbour/secret.txt",
        "sub/chained",
    ):
        with pytest.raises(SandboxEscape):
            box.resolve(path)
    # a link that goes out and comes back in lands inside, and is allowed
    os.symlink("../../../run-1/sub/file.txt", deeper / "round-trip")
    assert box.resolve("sub/deeper/round-trip") == box.path / "sub" / "file.txt"


def test_a_symlink_loop_is_refused(box: LocalSandbox) -> None:
    os.symlink("loop-b", box.path / "loop-a")
    os.symlink("loop-a", box.path / "loop-b")
    with pytest.raises(SandboxEscape):
        box.resolve("loop-a")


def test_paths_inside_resolve(box: LocalSandbox) -> None:
    root = box.path
    assert box.resolve("sub/file.txt") == root / "sub" / "file.txt"
    assert box.resolve("./sub/file.txt") == root / "sub" / "file.txt"
    assert box.resolve("/work/sub/file.txt") == root / "sub" / "file.txt"  # the path commands see
    assert box.resolve("/work") == root
    assert box.resolve("/work/") == root
    assert box.resolve(".") == root
    assert box.resolve("") == root
    assert box.resolve("sub/../x") == root / "x"  # '..' that stays inside
    assert box.resolve("sub/deeper/../../new/file.py") == root / "new" / "file.py"
    assert box.resolve("not/yet/there.txt") == root / "not" / "yet" / "there.txt"  # for write_file
    os.symlink("sub/file.txt", root / "alias")  # a link that stays inside is followed
    assert box.resolve("alias") == root / "sub" / "file.txt"
    os.symlink("../file.txt", root / "sub" / "deeper" / "back")
    assert box.resolve("sub/deeper/back") == root / "sub" / "file.txt"


def test_display_is_relative_to_the_working_directory(box: LocalSandbox) -> None:
    assert box.display(box.resolve("sub/file.txt")) == "sub/file.txt"
    assert box.display(box.resolve("/work/sub/deeper")) == "sub/deeper"
    assert box.display(box.path) == "."
    with pytest.raises(ValueError):
        box.display(Path("/etc/passwd"))


def test_the_root_is_resolved_so_a_linked_sandboxes_folder_still_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "linked")
    box = LocalSandbox.create(tmp_path / "linked", "run-1", {"a.txt": "a"}, isolate=False)
    assert box.path == real.resolve() / "run-1"
    assert box.resolve("a.txt").read_text() == "a"
    assert box.display(tmp_path / "linked" / "run-1" / "a.txt") == "a.txt"
