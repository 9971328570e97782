"""Scratch and library sandboxes under real bubblewrap: a scratch command works on an in-memory copy of its
directory, capped in size, and nothing it writes reaches the host; a library sandbox runs this library's
own Python with the interpreter and the library shown at their own paths and nothing else of where they
live (not the checkout's other files, not the home folder)."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers.bwrap import needs_bubblewrap
from helpers.env import REPO

from machine.sandboxes import Limits, LocalSandbox

pytestmark = needs_bubblewrap()


async def test_a_scratch_command_changes_nothing_on_the_host(tmp_path: Path) -> None:
    box = LocalSandbox.for_scratch(tmp_path, "s", {"a.txt": "start\n"})
    done = await box.exec("cat a.txt; echo more >> a.txt; echo new > b.txt; mkdir d; cat a.txt; ls")
    assert done.ok, done.stderr
    assert done.stdout.splitlines() == ["start", "start", "more", "a.txt", "b.txt", "d"]
    assert sorted(p.name for p in box.path.iterdir()) == ["a.txt"]
    assert (box.path / "a.txt").read_text() == "start\n" and done.reached == ()
    box.remove()


async def test_a_scratch_command_that_fills_its_directory_reaches_the_disk_cap(tmp_path: Path) -> None:
    small = LocalSandbox.with_limits(Limits(disk_bytes=32 * 1024**2))
    box = small.for_scratch(tmp_path, "s", {})
    done = await box.exec("dd if=/dev/zero of=big bs=1M count=100 2>/dev/null; echo $?")
    assert done.stdout.strip() == "1" and done.reached == ("disk",)
    assert "the disk cap of 32 MiB" in done.stderr
    assert [p.name for p in box.path.iterdir()] == []
    box.remove()


async def test_a_library_sandbox_runs_the_library_and_shows_nothing_else(tmp_path: Path) -> None:
    box = LocalSandbox.for_library(tmp_path, "l", {})
    probe = f"""
import os, machine, machine.sandboxes
print(machine.__file__)
print(os.path.exists({str(REPO / "tests")!r}), os.path.exists({str(REPO / ".git")!r}))
print(os.path.exists({str(Path.home() / ".bashrc")!r}), os.getcwd(), os.environ.get("HOME"))
"""
    done = await box.exec([sys.executable, "-P", "-c", probe])
    assert done.ok, done.stderr
    where, checkout, home = done.stdout.splitlines()
    assert where == str(Path(machine_file()).resolve())
    assert checkout == "False False"  # only the packages of a checkout, not its tests or .git
    assert home == "False /vetting /vetting"
    box.remove()


def machine_file() -> str:
    import machine

    return str(machine.__file__)
