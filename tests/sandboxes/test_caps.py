"""Caps on a command tree under real bubblewrap and the host's real cgroups: a bounded fork storm stops
at the process cap, an allocation past the memory cap is killed, each command's cgroup is gone after
it, and where no cgroup is writable the report says what is and is not capped.

Every loop is bounded (2,000 starts at most, every wait by a deadline) and every process is killed at
the end. The cgroup tests need a writable cgroup (v2 with ``pids`` and ``memory``, or the v1
controllers): off CI they skip without one, under ``CI=true`` they fail.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from pathlib import Path

import anyio
import pytest
from helpers.bwrap import ON_CI, needs_bubblewrap

from machine.sandboxes import Limits, LocalSandbox
from machine.sandboxes._caps import PREFIX, _plan

pytestmark = needs_bubblewrap()

CGROUPS = _plan(Limits().cgroup_root)
NO_CGROUP = "no writable cgroup here (v2 with pids and memory, or the v1 pids and memory controllers)"


@pytest.fixture
def cgroups() -> None:
    if CGROUPS.processes is None or CGROUPS.memory is None:
        if ON_CI:
            pytest.fail(f"CI=true, and {NO_CGROUP}", pytrace=False)
        pytest.skip(NO_CGROUP)


def host_processes() -> int:
    """The processes descending from this test's process (a sandboxed command's are among them): other
    work on the host, such as another test worker, comes and goes and is not counted."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path("/proc", entry, "stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    ours, grew = {os.getpid()}, True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in ours} - ours
        ours |= found
        grew = bool(found)
    return len(ours)


def sleepers(duration: str) -> list[int]:
    """Host PIDs of ``sleep <duration>``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path("/proc", entry, "cmdline").read_bytes().split(b"\0")[:2] == [
                    b"sleep",
                    duration.encode(),
                ]:
                    found.append(int(entry))
    return found


def kill_sleepers(duration: str) -> None:
    for pid in sleepers(duration):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


def our_groups() -> list[Path]:
    """The command groups this process has made and not removed."""
    mine = f"{PREFIX}{os.getpid()}-"
    parents = {c.parent for c in CGROUPS.controllers}
    return [entry for parent in parents for entry in parent.iterdir() if entry.name.startswith(mine)]


STORM = """
import subprocess, sys, time
started = refused = 0
held = []
for _ in range(2000):
    try:
        held.append(subprocess.Popen(["sleep", sys.argv[1]]))
        started += 1
    except OSError:
        refused += 1
print(started, refused, flush=True)
time.sleep(1.5)  # hold them while the host counts
"""


@pytest.mark.slow
@pytest.mark.usefixtures("cgroups")
async def test_a_fork_storm_stops_at_the_process_cap(tmp_path: Path) -> None:
    box = LocalSandbox.create(tmp_path, "storm", limits=Limits(processes=64))
    duration = f"{random.randint(300_000, 999_999)}.{random.randint(100, 999)}"
    before, peak, seen = host_processes(), 0, 0
    try:
        async with anyio.create_task_group() as group:
            results = []

            async def storm() -> None:
                results.append(await box.exec(["python3", "-c", STORM, duration], timeout_s=60))
                group.cancel_scope.cancel()

            group.start_soon(storm)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # sample until the command ends
                peak = max(peak, host_processes())
                seen = max(seen, len(sleepers(duration)))
                await anyio.sleep(0.02)
        started, refused = map(int, results[0].stdout.split())
        assert 32 <= started <= 64 and started + refused == 2000, results[0]
        assert seen <= 64
        # the margin is far below the 2,000 an uncapped storm makes
        assert peak - before <= 64 + 100, (before, peak)
        assert "[process starts were refused: the cap of 64 processes]" in results[0].stderr
        deadline = time.monotonic() + 5
        while sleepers(duration) and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        assert sleepers(duration) == []
        assert our_groups() == []  # each command's cgroup is removed after it
    finally:
        kill_sleepers(duration)


@pytest.mark.usefixtures("cgroups")
async def test_a_command_that_outgrows_the_memory_cap_is_killed(tmp_path: Path) -> None:
    box = LocalSandbox.create(tmp_path, "hungry", limits=Limits(memory_bytes=64 * 1024**2))
    heap = await box.exec(
        ["python3", "-c", "b = b'x' * (256 << 20); print('allocated', len(b))"], timeout_s=60
    )
    assert heap.exit_code != 0 and "allocated" not in heap.stdout, heap
    assert "[a process was killed: the memory cap of 64 MiB]" in heap.stderr
    # the sandbox's /tmp is memory too
    tmp = await box.exec("head -c 256M /dev/zero > /tmp/fill; echo wrote $(du -m /tmp/fill)", timeout_s=60)
    assert "wrote 256" not in tmp.stdout, tmp
    # the cap is per command: under it the same sandbox works, and the host process is untouched
    fits = await box.exec(["python3", "-c", "b = b'x' * (16 << 20); print('allocated', len(b))"])
    assert fits.ok and fits.stdout == f"allocated {16 << 20}\n"
    assert our_groups() == []


@pytest.mark.usefixtures("cgroups")
async def test_the_report_names_the_cgroup_that_caps_both(tmp_path: Path) -> None:
    report = LocalSandbox.create(tmp_path, "capped").isolation
    assert report.isolated and report.notes == ()
    assert (report.processes, report.memory_bytes) == (256, 2 * 1024**3)
    assert report.processes_by == report.memory_by == f"cgroup v{CGROUPS.processes.version}"  # type: ignore[union-attr]
    assert str(report).startswith("isolated by bubblewrap; processes capped at 256 by cgroup v")


async def test_without_a_writable_cgroup_rlimits_cap_memory_and_the_report_says_what_is_not_capped(
    tmp_path: Path,
) -> None:
    nowhere = tmp_path / "no-cgroups-here"  # as on a host whose cgroups are not writable
    limits = Limits(processes=64, memory_bytes=256 * 1024**2, cgroup_root=nowhere)
    box = LocalSandbox.create(tmp_path, "fallback", limits=limits)
    report = box.isolation
    assert report.memory_by == "RLIMIT_AS" and report.memory_bytes == 256 * 1024**2
    assert any("RLIMIT_AS caps each process" in note for note in report.notes)
    if os.getuid() == 0:
        assert report.processes is None and report.processes_by is None
        assert any("NOT capped" in note and "not enforced for root" in note for note in report.notes)
        assert "processes are NOT capped" in str(report)
    else:
        assert report.processes == 64 and report.processes_by == "RLIMIT_NPROC"
    heap = await box.exec(["python3", "-c", "b = b'x' * (512 << 20); print('allocated')"], timeout_s=60)
    assert heap.exit_code != 0 and "MemoryError" in heap.stderr and "allocated" not in heap.stdout, heap
    assert (await box.exec("echo still works")).stdout == "still works\n"
    assert not nowhere.exists()


def test_limits_that_cannot_work_are_refused() -> None:
    from machine.errors import BadInputError

    for bad in ({"processes": 0}, {"processes": 3}, {"memory_bytes": 1024}, {"processes": True}):
        with pytest.raises(BadInputError, match="sandbox limit"):
            Limits(**bad)  # type: ignore[arg-type]


async def test_with_limits_makes_a_factory_whose_sandboxes_have_them(tmp_path: Path) -> None:
    small = LocalSandbox.with_limits(Limits(processes=32))
    made = small.create(tmp_path, "small")
    opened = small.open(tmp_path / "small")
    assert made.limits.processes == opened.limits.processes == 32
    assert isinstance(made, LocalSandbox)
    assert LocalSandbox.create(tmp_path, "default").limits == Limits()


# --- the host path stays outside ---------------------------------------------------------------------


async def test_no_string_a_command_can_read_names_the_host_folder(tmp_path: Path) -> None:
    secret = f"hostpath{random.getrandbits(48):012x}"
    box = LocalSandbox.create(tmp_path / secret / "sandboxes", "run-1", {"a.txt": "a"})
    probes = {
        "pid 1's command line": "tr '\\0' ' ' < /proc/1/cmdline",
        "every command line": "cat /proc/[0-9]*/cmdline | tr '\\0' ' '",
        "every environment": "cat /proc/[0-9]*/environ | tr '\\0' '\\n'",
        "the environment": "env; echo HOME=$HOME PWD=$PWD; pwd; pwd -P",
        "working and root folders": "for p in /proc/[0-9]*; do readlink $p/cwd $p/root $p/exe; done",
        "open descriptors": "ls -l /proc/[0-9]*/fd/ 2>&1",
        "the cgroup": "cat /proc/self/cgroup",
        "python's view": "python3 -c 'import os; print(os.getcwd(), os.path.expanduser(\"~\"), os.environ)'",
    }
    for what, probe in probes.items():
        seen = await box.exec(probe)
        assert seen.exit_code == 0, (what, seen)
        assert seen.stdout.strip(), what  # the probe read something
        assert secret not in seen.stdout + seen.stderr, f"{what} shows the host folder: {seen.stdout}"
    assert secret in str(box.path)  # the host path does hold the secret
