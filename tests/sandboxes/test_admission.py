"""How a command is put under its caps: in its groups from its first instruction, with no program in front
of it; nothing run where a group cannot be joined; this process's threads back where they were; and
bubblewrap's options built once per sandbox. Real cgroups where the host has writable ones (the tests
that need them skip without, fail under ``CI=true``), and fake cgroup trees for the failures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.bwrap import ON_CI, needs_bubblewrap

from machine.sandboxes import Limits, LocalSandbox, Mount, _caps, _local
from machine.sandboxes._caps import CGROUP_ROOT, CommandGroup, _Controller, _own_cgroups, _plan

pytestmark = needs_bubblewrap()

CGROUPS = _plan(Limits().cgroup_root)
NO_CGROUP = "no writable cgroup here (v2 with pids and memory, or the v1 pids and memory controllers)"


@pytest.fixture
def cgroups() -> None:
    if not CGROUPS.controllers:
        if ON_CI:
            pytest.fail(f"CI=true, and {NO_CGROUP}", pytrace=False)
        pytest.skip(NO_CGROUP)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[_Controller, Path]]:
    """The groups of each command run from now on, as CommandGroup made them."""
    groups: list[dict[_Controller, Path]] = []

    class Recording(CommandGroup):
        @classmethod
        def make(cls, limits: Limits) -> CommandGroup:
            group = super().make(limits)
            groups.append(dict(group.dirs))
            return group

    monkeypatch.setattr(_local, "CommandGroup", Recording)
    return groups


def cgroup_paths(text: str) -> dict[str, str]:
    """A ``/proc/<pid>/cgroup`` text as {controller: path}, ``""`` for v2."""
    found = {}
    for line in text.splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            found[name] = path
    return found


def threads_cgroups() -> set[str]:
    """The cgroups of this process's threads, as their ``/proc`` files say them."""
    found = set()
    for task in os.listdir("/proc/self/task"):
        try:
            found.add(Path("/proc/self/task", task, "cgroup").read_text())
        except OSError:  # a thread that ended meanwhile
            continue
    return found


@pytest.mark.usefixtures("cgroups")
@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "not isolated"])
async def test_the_command_is_in_its_groups_from_its_first_instruction(
    tmp_path: Path, made: list[dict[_Controller, Path]], isolate: bool
) -> None:
    box = LocalSandbox.create(tmp_path, "first", isolate=isolate)
    before = threads_cgroups()
    seen = await box.exec(["cat", "/proc/self/cgroup"])
    assert seen.ok, seen
    paths = cgroup_paths(seen.stdout)
    for controller, folder in made[0].items():
        name = "" if controller.version == 2 else controller.name
        path = paths[name]
        # bubblewrap made the cgroup namespace of the command inside its group, so its root is the group
        assert path.endswith("/" + folder.name) or (isolate and path == "/"), (controller, seen.stdout)
    assert threads_cgroups() == before  # the thread that started it is back in its own groups
    assert not any(folder.exists() for folder in made[0].values())
    stdin = await box.exec(["readlink", "/proc/self/fd/0"])
    assert stdin.stdout == "/dev/null\n"


def fake_v2(root: Path) -> None:
    """A cgroup v2 tree of plain folders, where this process's cgroup offers pids and memory."""
    own = _own_cgroups()
    if "" not in own:
        pytest.skip("this host has no cgroup v2 line in /proc/self/cgroup to fake a tree for")
    parent = root / own[""].lstrip("/")
    parent.mkdir(parents=True, exist_ok=True)
    for folder in {root, parent}:
        (folder / "cgroup.controllers").write_text("pids memory\n")
    (parent / "cgroup.subtree_control").write_text("pids memory\n")


async def test_a_group_the_child_cannot_join_runs_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "cgroup"
    fake_v2(fake)
    set_caps = CommandGroup._set_caps

    def refusing(self: CommandGroup, controller: _Controller, folder: Path) -> None:
        set_caps(self, controller, folder)
        (folder / "cgroup.procs").symlink_to("/dev/full")  # every write fails: ENOSPC
        (folder / "cgroup.kill").write_text("")

    monkeypatch.setattr(CommandGroup, "_set_caps", refusing)
    monkeypatch.setattr(_caps, "REMOVE_WITHIN_S", 0.05)  # plain folders with files in them stay
    box = LocalSandbox.create(tmp_path, "refused", isolate=False, limits=Limits(cgroup_root=fake))
    assert box.isolation.processes_by == "cgroup v2"
    result = await box.exec(["touch", "ran"])
    assert result.exit_code is None and not result.ok
    assert result.stderr.startswith("[not run: it could not be put under its limits: [Errno 28]")
    assert "cgroup.procs" in result.stderr
    assert not (box.path / "ran").exists()


@pytest.mark.usefixtures("cgroups")
async def test_a_group_the_thread_cannot_join_runs_nothing_and_the_thread_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cgroup v1: the real pids group is joined, the (fake) memory one refuses, and the starting thread
    must leave the first one again: the group could not be removed with it inside."""
    if CGROUPS.processes is None or CGROUPS.processes.version != 1:
        pytest.skip("the starting thread joins groups only on cgroup v1")
    real, own = CGROUPS.processes.parent, _own_cgroups()
    fake = tmp_path / "cgroup"
    fake.mkdir()
    (fake / "pids").symlink_to(CGROUP_ROOT / "pids")
    (fake / "memory" / own.get("memory", "/").lstrip("/")).mkdir(parents=True, exist_ok=True)
    (fake / "memory" / "cgroup.procs").write_text("")
    monkeypatch.setattr(_caps, "REMOVE_WITHIN_S", 0.05)
    limits = Limits(cgroup_root=fake)
    plan = _plan(fake)
    assert plan.processes is not None and plan.memory is not None and plan.memory.version == 1
    box = LocalSandbox.create(tmp_path, "half", isolate=False, limits=limits)
    before = threads_cgroups()
    result = await box.exec(["touch", "ran"])
    assert result.stderr.startswith("[not run: it could not be put under its limits: [Errno 2]")
    assert "tasks" in result.stderr and not (box.path / "ran").exists()
    assert threads_cgroups() == before
    mine = f"{_caps.PREFIX}{os.getpid()}-"
    assert not [entry for entry in real.iterdir() if entry.name.startswith(mine)]  # removed: empty


async def test_bwrap_options_are_built_once_for_commands_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    build = _local.bwrap_options

    def counting(*args: object, **kwargs: object) -> list[str]:
        calls.append(1)
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_local, "bwrap_options", counting)
    (tmp_path / "project" / "a" / ".machine").mkdir(parents=True)
    (tmp_path / "project" / "a" / ".machine" / "secret").write_text("private")
    box = LocalSandbox.open(tmp_path / "project", hide=["a/.machine"])
    for _ in range(2):
        assert (await box.exec(["true"])).ok
    assert box.command_line(["true"])[-1] == "true"
    assert len(calls) == 1
    other = tmp_path / "other"
    other.mkdir()
    assert (await box.exec(["true"], mounts=[Mount(other, "/opt/other")])).ok
    assert len(calls) == 2
    (tmp_path / "project" / "a").rename(tmp_path / "project" / "b")  # the hidden folder moved
    seen = await box.exec("cat b/.machine/secret; ls b/.machine")
    assert len(calls) == 3 and "private" not in seen.stdout, seen
    assert (await box.exec(["true"])).ok and len(calls) == 3


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "not isolated"])
async def test_a_script_without_a_shebang_line_runs_with_sh(tmp_path: Path, isolate: bool) -> None:
    """As execvp does under bubblewrap, so without it too: nothing stands in front of the command now."""
    box = LocalSandbox.create(tmp_path, "script", {"s": 'echo "from the script: $1"\n'}, isolate=isolate)
    (box.path / "s").chmod(0o755)
    ran = await box.exec(["./s", "an argument"])
    assert ran.ok and ran.stdout == "from the script: an argument\n", ran
