"""Isolation under real bubblewrap, shown with real processes: no user data, no network (not even
the host's loopback), no inherited environment, a read-only system, and a timeout that kills every
process a command started, daemons included.

Off CI these tests skip, with the reason, where bubblewrap is missing or cannot make namespaces.
Under ``CI=true`` they FAIL instead: `make test` installs bubblewrap there, and a skip would hide that
isolation went untested. Every wait is bounded; the only packets sent go to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from helpers.env import on_ci

from machine.errors import BadInputError
from machine.sandboxes import LocalSandbox, Mount, SandboxEscape, bubblewrap
from machine.sandboxes._local import ENVIRONMENT, ETC_ALLOWED, WORKDIR, system_args

ON_CI = on_ci()
NO_BWRAP = (
    "bubblewrap (bwrap) is not installed, or cannot create namespaces here: install it "
    "(Debian/Ubuntu: apt-get install bubblewrap; `make test` does) to run the sandbox isolation tests"
)


@pytest.fixture
def bubblewrap_or_fail() -> None:
    """Reached only where the skipif below did not skip: off CI bubblewrap works; on CI it must."""
    if bubblewrap() is None:
        pytest.fail(f"CI=true, and {NO_BWRAP}", pytrace=False)


pytestmark = [
    pytest.mark.skipif(bubblewrap() is None and not ON_CI, reason=NO_BWRAP),
    pytest.mark.usefixtures("bubblewrap_or_fail"),
]


def token() -> str:
    return f"secret-{random.getrandbits(64):016x}"


# --- user data ------------------------------------------------------------------------------------


@pytest.fixture
def secret_in_home() -> Iterator[list[Path]]:
    """A file with a unique token in the real home and, where we may write there, in /root; removed after."""
    made: list[Path] = []
    for base in dict.fromkeys([Path.home(), Path("/root")]):
        if base.is_dir() and os.access(base, os.W_OK):
            folder = Path(tempfile.mkdtemp(prefix=".machine-sandbox-test-", dir=base))
            (folder / "secret.txt").write_text(token())
            made.append(folder / "secret.txt")
    assert made, "neither the home folder nor /root is writable: nothing to hide"
    try:
        yield made
    finally:
        for secret in made:
            shutil.rmtree(secret.parent, ignore_errors=True)


async def test_files_in_the_real_home_and_root_are_unreadable(
    sandbox: LocalSandbox, secret_in_home: list[Path]
) -> None:
    for secret in secret_in_home:
        assert secret.read_text().startswith("secret-")  # the host can read it
        result = await sandbox.exec(["cat", str(secret)])
        assert result.exit_code != 0
        assert "No such file or directory" in result.stderr
        assert secret.read_text() not in result.stdout
    listing = await sandbox.exec("ls -d /home /root; ls -A /home /root")
    assert listing.exit_code != 0
    assert listing.stdout == ""


async def test_the_hosts_tmp_is_hidden_behind_a_private_one(sandbox: LocalSandbox) -> None:
    secret = token()
    with tempfile.NamedTemporaryFile("w", dir="/tmp", prefix="machine-sandbox-test-", suffix=".txt") as f:
        f.write(secret)
        f.flush()
        seen = await sandbox.exec(["cat", f.name])
        assert seen.exit_code != 0 and secret not in seen.stdout
        listing = await sandbox.exec(["ls", "-A", "/tmp"])
        assert listing.ok and listing.stdout == ""  # empty: a fresh tmpfs
        written = await sandbox.exec(f"echo inside > /tmp/{secret} && cat /tmp/{secret}")
        assert written.ok and written.stdout == "inside\n"  # writable, but private
    assert not Path("/tmp", secret).exists()


async def test_only_the_system_is_there_and_etc_holds_no_secrets(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec(["ls", "-A", "/"])
    assert result.ok
    top = set(result.stdout.split())
    assert {"usr", "etc", "proc", "dev", "tmp", "work"} <= top
    for hidden in ("home", "root", "opt", "var", "run", "mnt", "srv", "sys", "media", "boot"):
        assert hidden not in top
    etc = await sandbox.exec(["ls", "-A", "/etc"])
    assert etc.ok
    allowed = {pattern.split("/")[0] for pattern in ETC_ALLOWED}
    for name in etc.stdout.split():
        assert any(Path(name).match(pattern) for pattern in allowed), f"/etc/{name} is not on the list"
    for secret in ("shadow", "gshadow", "ssh", "machine-id", "pip.conf", "npmrc", "gitconfig", "resolv.conf"):
        assert secret not in etc.stdout.split()
    private = await sandbox.exec("cat /etc/shadow; ls /etc/ssl/private; ls -A /usr/local/etc")
    assert "No such file or directory" in private.stderr
    assert private.stdout == ""


async def test_everyday_programs_work_inside(sandbox: LocalSandbox) -> None:
    (sandbox.path / "test_ok.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_ok(self):\n        self.assertEqual(1 + 1, 2)\n"
    )
    result = await sandbox.exec(
        "set -e; ls; echo needle > hay.txt; grep -n needle hay.txt; "
        "python3 -c 'import ssl, json, unittest; ssl.create_default_context(); print(\"imports ok\")'; "
        "python3 -m unittest -q 2>&1 | tail -1; whoami >/dev/null; hostname",
        timeout_s=30,
    )
    assert result.ok, result.stderr
    assert "test_ok.py" in result.stdout
    assert "1:needle" in result.stdout
    assert "imports ok" in result.stdout
    assert "OK" in result.stdout
    assert result.stdout.rstrip().endswith("sandbox")  # its own hostname


# --- network --------------------------------------------------------------------------------------


class LoopbackServer:
    """A real TCP server on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + 60  # bounded even if the test never says stop
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            with conn:
                conn.sendall(b"hello from the host\n")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer()
    try:
        yield srv
    finally:
        srv.close()


CONNECT = (
    "import socket, sys\n"
    "s = socket.socket()\n"
    "s.settimeout(3)\n"
    "try:\n"
    "    s.connect(('127.0.0.1', int(sys.argv[1])))\n"
    "    print('connected', s.recv(100).decode().strip())\n"
    "except OSError as e:\n"
    "    print('refused', type(e).__name__)\n"
    "    sys.exit(3)\n"
)


async def test_a_server_on_the_hosts_loopback_is_unreachable(
    sandbox: LocalSandbox, plain: LocalSandbox, server: LoopbackServer
) -> None:
    # The same command reaches the server from an unisolated sandbox: the check is not vacuous.
    reached = await plain.exec(["python3", "-c", CONNECT, str(server.port)], timeout_s=10)
    assert reached.ok and "connected hello from the host" in reached.stdout
    assert server.accepted == 1

    blocked = await sandbox.exec(["python3", "-c", CONNECT, str(server.port)], timeout_s=10)
    assert blocked.exit_code == 3, blocked
    assert "refused" in blocked.stdout
    assert server.accepted == 1  # nothing more arrived


async def test_the_only_interface_is_its_own_loopback(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec(["cat", "/proc/net/dev"])
    assert result.ok
    interfaces = [line.split(":")[0].strip() for line in result.stdout.splitlines()[2:]]
    assert interfaces == ["lo"]


# --- environment ----------------------------------------------------------------------------------


async def test_no_variable_of_the_parent_gets_in(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = token()
    monkeypatch.setenv("TINKER_API_KEY", secret)
    monkeypatch.setenv("OPENROUTER_API_KEY", secret)
    result = await sandbox.exec(["env"])
    assert result.ok
    assert "TINKER_API_KEY" not in result.stdout and secret not in result.stdout
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert names <= {*ENVIRONMENT, "PWD"}  # PWD: bubblewrap's --chdir sets it
    assert f"HOME={WORKDIR}" in result.stdout.splitlines()
    # nor through any process's environment block, bubblewrap's own included
    environs = await sandbox.exec("cat /proc/[0-9]*/environ | tr '\\0' '\\n'")
    assert secret not in environs.stdout and "TINKER_API_KEY" not in environs.stdout


# --- the process tree at the timeout ---------------------------------------------------------------


def marker() -> str:
    """A sleep duration no other process on this machine will have in its command line."""
    return f"{random.randint(300_000, 999_999)}.{random.randint(100, 999)}"


def holders(duration: str) -> list[int]:
    """Host PIDs of ``sleep <duration>``, found by scanning /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", duration.encode()]:
                found.append(int(entry))
    return found


async def settle(duration: str, *, alive: bool, within_s: float = 3.0) -> bool:
    """Whether ``sleep <duration>`` is (alive=True) or is no longer (alive=False) on the host's process
    list within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if bool(holders(duration)) == alive:
            return True
        await anyio.sleep(0.02)
    return bool(holders(duration)) == alive


def kill_leftovers(duration: str) -> None:
    for pid in holders(duration):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


DAEMONS = {
    "background": "sleep {d} & sleep 600",
    "grandchild": "sh -c 'sleep {d} &'; sleep 600",
    "setsid": "setsid sleep {d} & sleep 600",
    "setsid-detached": "setsid sh -c 'sleep {d} </dev/null >/dev/null 2>&1 &'; sleep 600",
    "nohup": "nohup sleep {d} >/dev/null 2>&1 & sleep 600",
    "double-fork": "(sh -c 'setsid sleep {d} >/dev/null 2>&1 &' &); sleep 600",
}


@pytest.mark.slow
@pytest.mark.parametrize("form", list(DAEMONS))
async def test_the_timeout_kills_every_process_the_command_started(sandbox: LocalSandbox, form: str) -> None:
    duration = marker()
    try:
        async with anyio.create_task_group() as group:
            results = []

            async def run() -> None:
                results.append(await sandbox.exec(DAEMONS[form].format(d=duration), timeout_s=2))

            group.start_soon(run)
            assert await settle(duration, alive=True), "the daemon never started: the test proves nothing"
        result = results[0]
        assert result.timed_out and result.exit_code is None
        assert "killed after 2 s" in result.stderr
        assert 1.9 < result.seconds < 6
        assert await settle(duration, alive=False), f"{form}: sleep {duration} survived the timeout"
    finally:
        kill_leftovers(duration)


async def test_what_a_finished_command_left_running_is_killed_with_it(sandbox: LocalSandbox) -> None:
    duration = marker()
    try:
        async with anyio.create_task_group() as group:
            results = []

            async def run() -> None:
                results.append(
                    await sandbox.exec(f"setsid sleep {duration} >/dev/null 2>&1 & sleep 0.5", timeout_s=10)
                )

            group.start_soon(run)
            assert await settle(duration, alive=True)
        assert results[0].ok and not results[0].timed_out
        assert results[0].seconds < 3  # it did not wait for the daemon
        assert await settle(duration, alive=False)
    finally:
        kill_leftovers(duration)


# --- results: exit codes, stderr, capped output ----------------------------------------------------


async def test_exit_codes_and_stderr_come_back(sandbox: LocalSandbox) -> None:
    failed = await sandbox.exec("echo out; echo oops >&2; exit 3")
    assert (failed.exit_code, failed.stdout, failed.stderr) == (3, "out\n", "oops\n")
    assert not failed.ok and not failed.timed_out and not failed.truncated
    missing = await sandbox.exec("no-such-program-here")
    assert missing.exit_code == 127 and "not found" in missing.stderr
    argv = await sandbox.exec(["python3", "-c", "import sys; print(sys.argv[1:])", "a b", "$HOME"])
    assert argv.ok and argv.stdout == "['a b', '$HOME']\n"  # argv is passed as is, not through a shell


async def test_output_is_capped_with_a_note(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec(
        "head -c 3000000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' e >&2",
        max_output=1000,
        timeout_s=30,
    )
    assert result.exit_code == 0 and not result.timed_out  # a chatty command is drained, not blocked
    assert result.truncated
    assert result.stdout.startswith("a" * 1000 + "\n[output cut at 1,000 characters of 3,000,000 bytes]")
    assert result.stderr.startswith("e" * 1000 + "\n[output cut at 1,000 characters")
    short = await sandbox.exec("echo fits", max_output=1000)
    assert short.stdout == "fits\n" and not short.truncated


# --- the file system: /work is the only writable place ---------------------------------------------


async def test_the_run_dir_is_work_and_relative_paths_work(tmp_path: Path) -> None:
    box = LocalSandbox.create(tmp_path, "seeded", {"src/app.py": "print('from app')\n", "notes.txt": "n"})
    result = await box.exec(
        "pwd; echo $HOME; cat notes.txt; echo; cat /work/notes.txt; echo; cd src && python3 app.py && ls ../"
    )
    assert result.ok, result.stderr
    assert result.stdout.splitlines() == [WORKDIR, WORKDIR, "n", "n", "from app", "notes.txt", "src"]


async def test_writes_land_in_the_run_dir_and_nowhere_else(sandbox: LocalSandbox) -> None:
    name = token()
    result = await sandbox.exec(
        f"echo made > {name}.txt && mkdir -p deep/er && echo x > deep/er/y && echo h > ~/home.txt"
    )
    assert result.ok, result.stderr
    assert (sandbox.path / f"{name}.txt").read_text() == "made\n"
    assert (sandbox.path / "deep" / "er" / "y").read_text() == "x\n"
    assert (sandbox.path / "home.txt").read_text() == "h\n"
    for target in (f"/usr/{name}", f"/etc/{name}", f"/{name}", f"/usr/local/etc/{name}"):
        denied = await sandbox.exec(["touch", target])
        assert denied.exit_code != 0, target
        assert "Read-only file system" in denied.stderr or "Permission denied" in denied.stderr, denied
        assert not Path(target).exists()


async def test_a_mount_is_visible_and_read_only(sandbox: LocalSandbox, tmp_path: Path) -> None:
    tool = tmp_path / "tooling"
    (tool / "bin").mkdir(parents=True)
    (tool / "bin" / "hello").write_text("#!/bin/sh\necho hello from the mount\n")
    (tool / "bin" / "hello").chmod(0o755)
    mounts = [Mount(tool, "/opt/tooling")]
    result = await sandbox.exec("/opt/tooling/bin/hello && touch /opt/tooling/x", mounts=mounts)
    assert "hello from the mount" in result.stdout
    assert result.exit_code != 0 and "Read-only file system" in result.stderr
    assert not (tool / "x").exists()
    assert (await sandbox.exec(["ls", "/opt/tooling"])).exit_code != 0  # only while mounted


async def test_symlinks_a_command_makes_are_refused_by_resolve(sandbox: LocalSandbox) -> None:
    made = await sandbox.exec("ln -s /etc etc-link && mkdir -p sub/deeper && ln -s ../../.. sub/deeper/up")
    assert made.ok, made.stderr
    for escape in ("etc-link", "etc-link/passwd", "sub/deeper/up", "sub/deeper/up/x", "/work/etc-link"):
        with pytest.raises(SandboxEscape):
            sandbox.resolve(escape)
    # inside, the link points at the sandbox's own /etc, which is not the host's
    seen = await sandbox.exec(["cat", "etc-link/shadow"])
    assert seen.exit_code != 0


async def test_cancelling_the_caller_kills_the_command_too(sandbox: LocalSandbox) -> None:
    """A run stopped from outside (its task cancelled) leaves no process behind either."""
    duration = marker()
    try:
        with anyio.move_on_after(5) as outer:  # bounded, in case the cancellation were swallowed
            async with anyio.create_task_group() as group:
                group.start_soon(
                    functools.partial(sandbox.exec, timeout_s=600), f"setsid sleep {duration} & sleep 600"
                )
                assert await settle(duration, alive=True)
                group.cancel_scope.cancel()
        assert not outer.cancelled_caught
        assert await settle(duration, alive=False), f"sleep {duration} survived the cancellation"
    finally:
        kill_leftovers(duration)


async def test_the_command_cannot_make_namespaces_of_its_own(sandbox: LocalSandbox) -> None:
    if "--disable-userns" not in system_args():  # the fallback for older bubblewrap is tested elsewhere
        if ON_CI:
            pytest.fail("CI's bubblewrap predates --disable-userns (0.8)")
        pytest.skip("this bubblewrap predates --disable-userns (0.8)")
    result = await sandbox.exec("unshare -r id")
    assert result.exit_code != 0
    caps = await sandbox.exec("grep CapEff /proc/self/status")
    assert caps.stdout.split() == ["CapEff:", "0000000000000000"]  # and no capabilities


@pytest.mark.parametrize(
    "mount",
    [
        Mount(Path("/no/such/folder")),
        Mount(Path("relative/folder")),
        Mount(Path("/usr/share"), "/"),
        Mount(Path("/usr/share"), "relative"),
        Mount(Path("/usr/share"), "/opt/../etc"),
        Mount(Path("/usr/share"), "/work"),
        Mount(Path("/usr/share"), "/work/share"),
    ],
)
def test_a_mount_that_makes_no_sense_is_refused(sandbox: LocalSandbox, mount: Mount) -> None:
    with pytest.raises(BadInputError):
        sandbox.command_line(["true"], [mount])


async def test_a_hidden_folder_is_empty_and_read_only_inside(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".machine").mkdir(parents=True)
    (project / ".machine" / "store.db").write_text("private runs")
    (project / "app.py").write_text("print('app')")
    sandbox = LocalSandbox(project, hide=[".machine"])
    seen = await sandbox.exec("ls -A .machine; cat .machine/store.db; echo x > .machine/new; python3 app.py")
    assert "private runs" not in seen.stdout
    assert "app" in seen.stdout
    assert "Read-only file system" in seen.stderr
    assert (project / ".machine" / "store.db").read_text() == "private runs"
    assert not (project / ".machine" / "new").exists()
    with pytest.raises(SandboxEscape, match="hidden"):
        sandbox.resolve(".machine/store.db")
