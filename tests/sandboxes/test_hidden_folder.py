"""A project's hidden ``.machine`` (the store and the spending log) under real bubblewrap, attacked the
ways a run can: renaming the workspace folder or the one above it, symlinks, ``..``, and a search of
the whole tree, then reading and rewriting what it finds. The folder is held by what it is, so both
files stay unread and untouched, through commands and through the file tools' paths alike."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from helpers.bwrap import needs_bubblewrap

from machine.sandboxes import LocalSandbox, SandboxEscape

pytestmark = needs_bubblewrap()


class Project:
    """A project whose workspace sits two folders down, with a store and a spending log in its data."""

    def __init__(self, base: Path) -> None:
        self.secret = f"private-{random.getrandbits(64):016x}"
        self.root = base / "project"
        self.data = self.root / "app" / "ws" / ".machine"
        self.data.mkdir(parents=True)
        self.store = self.data / "store.db"
        self.log = self.data / "spending.jsonl"
        self.store.write_bytes(b"SQLite format 3\0" + self.secret.encode())
        self.log.write_text(f'{{"spent_usd": 0.5, "note": "{self.secret}"}}\n')
        (self.root / "app" / "main.py").write_text("print('app')\n")
        self.before = {
            path: (path.read_bytes(), os.stat(path).st_mtime_ns) for path in (self.store, self.log)
        }

    def sandbox(self) -> LocalSandbox:
        return LocalSandbox.open(self.root, hide=["app/ws/.machine"])

    def untouched(self) -> None:
        for path, (content, mtime) in self.before.items():
            assert path.read_bytes() == content and os.stat(path).st_mtime_ns == mtime, path
        assert sorted(p.name for p in self.data.iterdir()) == ["spending.jsonl", "store.db"]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


READ_AND_REWRITE = (
    "for f in $(find /work -name store.db -o -name spending.jsonl 2>/dev/null) "
    "m/store.db m/spending.jsonl app/ws/.machine/../.machine/store.db; do "
    "cat $f; echo overwritten > $f; echo '{}' >> $f; done; "
    "cat /work/app*/ws*/.machine/* /work/app*/ws*/.machine*/* 2>&1; ls -laR /work 2>&1"
)


async def test_renaming_the_workspace_or_its_parent_does_not_uncover_its_data(project: Project) -> None:
    sandbox = project.sandbox()
    for attack in (
        "mv app/ws app/ws2",
        "mv app app2",
        "mv app/ws/.machine app/ws/m",
        "rm -rf app/ws",
        "mkdir -p elsewhere && mv app elsewhere/",
        "cp -a app /tmp/copy && mv app /tmp/ && cat /tmp/copy/ws/.machine/*",
        "ln -s app/ws/.machine m",
        "cd app/ws/.machine/.. && mv .machine gone; mv ../ws ../ws3",
    ):
        done = await sandbox.exec(attack, timeout_s=30)
        assert project.secret not in done.stdout + done.stderr, attack
        after = await sandbox.exec(READ_AND_REWRITE, timeout_s=30)
        assert project.secret not in after.stdout + after.stderr, (attack, after.stdout)
        project.untouched()
    still = await sandbox.exec("echo 'print(1 + 1)' > app/ws/ok.py && python3 app/ws/ok.py", timeout_s=30)
    assert still.stdout == "2\n", still  # the project is still a working folder


async def test_a_folder_moved_on_the_host_is_still_hidden_where_it_now_is(project: Project) -> None:
    """Held by identity, not by its path: moved between two commands, it is covered at its new place,
    and the file tools refuse every name that leads into it."""
    sandbox = project.sandbox()
    os.rename(project.root / "app", project.root / "renamed")
    moved = project.root / "renamed" / "ws" / ".machine"
    seen = await sandbox.exec(
        "ls -A renamed/ws/.machine; cat renamed/ws/.machine/store.db renamed/ws/.machine/spending.jsonl"
    )
    assert seen.exit_code != 0 and seen.stdout == "" and project.secret not in seen.stderr
    written = await sandbox.exec("echo x > renamed/ws/.machine/spending.jsonl")
    assert written.exit_code != 0 and "Read-only file system" in written.stderr
    (project.root / "link").symlink_to("renamed/ws/.machine")
    for name in (
        "renamed/ws/.machine/store.db",
        "renamed/ws/.machine",
        "link/spending.jsonl",
        "renamed/ws/../ws/.machine",
    ):
        with pytest.raises(SandboxEscape, match="hidden"):
            sandbox.resolve(name)
    assert (moved / "store.db").read_bytes().endswith(project.secret.encode())
    assert sandbox.resolve("renamed/main.py") == project.root / "renamed" / "main.py"


async def test_the_folders_above_the_data_are_open_to_the_run(project: Project) -> None:
    """Only renaming them is refused: the run reads and writes its project as before."""
    sandbox = project.sandbox()
    work = await sandbox.exec(
        "echo n > app/new.txt && mkdir app/ws/src && echo s > app/ws/src/s.py && mv app/new.txt app/ws/src/ "
        "&& cat app/ws/src/new.txt && rm app/ws/src/new.txt && mv app/ws/src app/ws/lib && ls app/ws",
        timeout_s=30,
    )
    assert work.ok, work.stderr
    assert work.stdout.split() == ["n", "lib"]
    assert (project.root / "app" / "ws" / "lib" / "s.py").read_text() == "s\n"
    project.untouched()
