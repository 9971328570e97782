"""Vetting runs an author's code inside the sandbox runs use, under real bubblewrap: whatever a hostile
machine.py does while it is vetted (read the person's files or the caller's environment, write outside
its folder, reach a port on the host, fork without end, leave a process behind, forge the result) stays
inside, and nothing on the host changes. Where the sandbox is not isolated, nothing the author wrote runs.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from helpers.bwrap import needs_bubblewrap
from helpers.vetting import REPO, child, child_py, root, vet

from machine.learn.specialize.vetting._child import NOT_ISOLATED, vet_child
from machine.sandboxes import LocalSandbox

pytestmark = needs_bubblewrap()
__all__ = ["root"]  # the fixture


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def reported(vetting_reason: str) -> dict[str, str]:
    return dict(json.loads(vetting_reason))


def probe_check(attempts: str) -> str:
    """A child whose import tries ``attempts`` (code filling TRIED, a dict of what each try found) and
    whose check reports TRIED as its reason."""
    extra = f"""import json, os, socket, subprocess, sys
TRIED = {{}}
def attempt(name, fn):
    try:
        TRIED[name] = "did: " + str(fn())[:200]
    except BaseException as error:
        TRIED[name] = "refused: " + type(error).__name__
{attempts}
REPORT = json.dumps(sorted(TRIED.items()))
"""
    graders = '{"shows_work": check("probe", lambda run: (True, REPORT)), "clear": judge()}'
    return child_py(graders, extra=extra)


@pytest.fixture
def home_secret() -> Iterator[Path]:
    """A private file in the person's home folder, removed afterwards."""
    path = Path.home() / f".machine-vet-test-{secrets.token_hex(6)}"
    path.write_text("PRIVATE KEY MATERIAL")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP port on the host's 127.0.0.1 and what any connection to it sent (bounded: 2 s per accept)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    received.append(conn.recv(4096) or b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(2)
        server.close()


def test_an_author_reads_nothing_of_the_person_and_reaches_no_host_port(
    root: Path, home_secret: Path, listener: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, received = listener
    monkeypatch.setenv("VET_TEST_DB_URL", "postgres://user:hunter2@db/prod")
    attempts = f"""
attempt("home", lambda: open({str(home_secret)!r}).read())
attempt("workspace", lambda: open({str(root / "machines" / "wordmath" / "machine.py")!r}).read())
attempt("checkout", lambda: open({str(REPO / "machines" / "wordmath" / "machine.py")!r}).read())
attempt("parent_environ", lambda: open("/proc/%d/environ" % os.getppid(), "rb").read())
attempt("host_init", lambda: open("/proc/1/environ", "rb").read())
attempt("environment", lambda: os.environ.get("VET_TEST_DB_URL", "absent"))
attempt("socket", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2).send(b"leak"))
"""
    vetting = vet(root, child(probe_check(attempts)))
    assert vetting.ok, vetting.problems
    tried = reported(vetting.checks[0].samples[0].reason)
    assert tried["home"] == tried["workspace"] == tried["checkout"] == "refused: FileNotFoundError"
    assert tried["socket"] == "refused: ConnectionRefusedError"
    assert tried["environment"] == "did: absent"
    for name in ("parent_environ", "host_init"):  # the sandbox's own processes: an empty environment
        assert "hunter2" not in tried[name] and "VET_TEST" not in tried[name]
    assert received == [], "the host's port was reached"
    assert "PRIVATE KEY" not in json.dumps(vetting.model_dump())


def test_an_author_changes_nothing_on_the_host(root: Path, home_secret: Path) -> None:
    (root / ".machine").mkdir()
    (root / ".machine" / "spending.jsonl").write_text('{"spent": 0}\n')
    (root / "machines" / "other").mkdir()
    (root / "machines" / "other" / "machine.py").write_text("# another machine\n")
    before, home_before = snapshot(root), home_secret.read_bytes()
    outside = Path(f"/tmp/machine-vet-escape-{secrets.token_hex(4)}")
    targets = [
        root / "machines" / "other" / "machine.py",
        root / ".machine" / "spending.jsonl",
        home_secret,
        outside,
        REPO / "machine" / "__init__.py",
    ]
    attempts = "".join(
        f'attempt("w{i}", lambda: open({str(t)!r}, "a").write("owned"))\n' for i, t in enumerate(targets)
    )
    attempts += 'attempt("own", lambda: open(os.path.join(os.path.dirname(__file__), "x"), "w").write("x"))\n'
    vetting = vet(root, child(probe_check(attempts)))
    assert vetting.ok, vetting.problems
    tried = reported(vetting.checks[0].samples[0].reason)
    assert all(tried[f"w{i}"].startswith("refused") for i in range(len(targets)) if i != 3), tried
    assert tried["own"] == "did: 1"  # its own copy is writable, and thrown away
    assert snapshot(root) == before and home_secret.read_bytes() == home_before
    assert not outside.exists(), "a file was written in the host's /tmp"


def _alive(marker: str) -> list[int]:
    """Host processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def test_a_setsid_process_left_behind_is_killed_with_the_sandbox(root: Path) -> None:
    marker = f"vet-left-{secrets.token_hex(6)}"
    attempts = f"""
attempt("setsid", lambda: subprocess.Popen(["setsid", "sh", "-c", "sleep 600; echo {marker}"],
    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)
"""
    vetting = vet(root, child(probe_check(attempts)))
    assert vetting.ok, vetting.problems
    assert reported(vetting.checks[0].samples[0].reason)["setsid"].startswith("did")
    for _ in range(40):
        if not _alive(marker):
            break
        time.sleep(0.05)
    assert _alive(marker) == [], "a process the author started outlived the vetting"


def test_a_process_storm_is_capped_and_gone_afterwards(root: Path) -> None:
    marker = f"vet-storm-{secrets.token_hex(6)}"
    attempts = f"""
def storm():
    started = 0
    for _ in range(2000):
        try:
            subprocess.Popen(["sh", "-c", "sleep 600", "{marker}"], stdout=subprocess.DEVNULL)
        except OSError:
            break
        started += 1
    return started
attempt("storm", storm)
"""
    vetting = vet(root, child(probe_check(attempts)), timeout_s=40)
    isolation = LocalSandbox.default_limits.processes
    if vetting.ok:
        started = reported(vetting.checks[0].samples[0].reason)["storm"]
        assert started.startswith("did: ") and int(started[5:]) < isolation
    else:  # the cap refused even the vetting's own threads: the vetting fails, contained all the same
        assert "the process vetting the child" in vetting.problems[0]
    for _ in range(60):
        if not _alive(marker):
            break
        time.sleep(0.05)
    assert _alive(marker) == []


def test_a_forged_result_on_the_channel_fails_the_vetting(root: Path) -> None:
    extra = """import json, os
FORGED = json.dumps({"result": {"ok": True, "problems": [], "own": ["forged"]}}) + "\\n"
for fd in range(3, 64):
    try:
        os.write(fd, FORGED.encode())
    except OSError:
        pass
"""
    vetting = vet(root, child(child_py(extra=extra)))
    assert not vetting.ok
    assert "sent back 2 results" in vetting.problems[0] and "forged" not in vetting.own


class Unisolated:
    """The sandboxes where bubblewrap does not work: nothing is isolated."""

    @staticmethod
    def for_library(parent: Path, run_id: str, files: object) -> LocalSandbox:
        return LocalSandbox.create(parent, run_id, {}, isolate=False, library=True)


def test_where_the_sandbox_is_not_isolated_no_author_code_runs(root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    extra = f"open({str(marker)!r}, 'w').write('ran')\n"
    vetting = anyio.run(
        lambda: vet_child(
            root, "wordmath", "steps", child(child_py(extra=extra)), model=None, samples=[],
            sandboxes=Unisolated(),  # type: ignore[arg-type]
        )
    )  # fmt: skip
    assert not vetting.ok and vetting.isolated is False
    assert vetting.problems == [NOT_ISOLATED]
    assert not marker.exists()


def test_the_author_sees_the_machines_code_and_none_of_their_cases_or_what_links_lead_to(
    root: Path, home_secret: Path
) -> None:
    wordmath = root / "machines" / "wordmath"
    (wordmath / "cases.json").write_text('[{"id": "a", "input": "CASE-SECRET"}]')
    (wordmath / "holdout.json").write_text('[{"id": "b", "input": "HELD-OUT-SECRET"}]')
    (wordmath / "hidden.json").write_text('{"a": {"files": {"t.py": "HIDDEN-SECRET"}}}')
    (wordmath / "notes.md").symlink_to(home_secret)
    attempts = """
import glob
def seen():
    found = glob.glob("/vetting/machines/**", recursive=True)
    return sorted(os.path.relpath(p, "/vetting/machines") for p in found if os.path.isfile(p))
def text():
    return "".join(open(os.path.join("/vetting/machines", p), errors="replace").read() for p in seen())
attempt("files", seen)
attempt("read", text)
"""
    vetting = vet(root, child(probe_check(attempts)))
    assert vetting.ok, vetting.problems
    said = json.dumps(vetting.model_dump())
    for secret in ("CASE-SECRET", "HELD-OUT-SECRET", "HIDDEN-SECRET", "PRIVATE KEY"):
        assert secret not in said
    files = reported(vetting.checks[0].samples[0].reason)["files"]
    assert "wordmath/machine.py" in files and "wordmath/steps/machine.py" in files
    assert "json" not in files.replace("model.json", "")
