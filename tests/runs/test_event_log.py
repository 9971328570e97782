"""The event log: one JSON line an event, private, appended by several processes at once without a line
ever broken, rotated past its size, and turned off (never failing a run) when it cannot be written."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from machine.runs import EVENTS_FILE, EventLog, event_preview
from machine.runs import _events as events


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_event_is_one_private_line(tmp_path: Path) -> None:
    path = tmp_path / ".machine" / EVENTS_FILE
    log = EventLog(path)
    log.emit("run_started", run="r1", machine="m", input="two\nlines")
    log.emit("graded", run="r1", machine="m", score=0.5, passed=False)
    log.close()
    first, second = lines(path)
    assert (
        first["kind"] == "run_started" and first["input"] == "two\nlines" and isinstance(first["at"], float)
    )
    assert second == {
        "at": second["at"],
        "kind": "graded",
        "run": "r1",
        "machine": "m",
        "score": 0.5,
        "passed": False,
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_preview_is_cut_and_says_so() -> None:
    assert event_preview("short") == "short" and event_preview(None) is None
    cut = event_preview("x" * 1000)
    assert cut is not None and len(cut) == events.PREVIEW and cut.endswith("…")


WRITER = """
import sys, time
from pathlib import Path
from machine.runs import EventLog
log = EventLog(Path(sys.argv[1]))
time.sleep(max(0.0, float(sys.argv[3]) - time.time()))  # every writer starts at once
for i in range(3000):
    text = f"{i} " + sys.argv[2] * 2000
    log.emit("step", run=sys.argv[2], machine="m", type="assistant", text=text, tool=None)
    if i % 100 == 0:
        time.sleep(0.002)  # batches of every size, the writers' overlapping
"""


def test_several_processes_append_whole_lines(tmp_path: Path) -> None:
    """Three real processes write batches into one file at once: every line whole, every event there, each
    process's in the order it emitted them (what is pending at a normal exit written then)."""
    path = tmp_path / EVENTS_FILE
    start = str(time.time() + 1)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, start]) for name in ("a", "b", "c")
    ]
    for writer in writers:
        assert writer.wait(timeout=60) == 0
    seen = lines(path)  # every line parses: no two writes interleaved
    assert len(seen) == 9000
    for name in ("a", "b", "c"):
        texts = [str(e["text"]) for e in seen if e["run"] == name]
        assert [int(t.split()[0]) for t in texts] == list(range(3000))
        assert all(len(t) == events.PREVIEW and t.endswith(name + "…") for t in texts)


EXITS = """
import sys
from pathlib import Path
from machine.runs import EventLog
from machine.runs import _events
_events.WINDOW_S = 600.0  # the writer would wait long: what is written, the exit writes
log = EventLog(Path(sys.argv[1]))
for i in range(1000):
    log.emit("graded", run=f"r{i}", machine="m", score=1.0, passed=True)
"""  # and ends at once: no flush, no close


def test_a_process_that_ends_normally_writes_what_is_pending(tmp_path: Path) -> None:
    path = tmp_path / EVENTS_FILE
    done = subprocess.run([sys.executable, "-c", EXITS, str(path)], timeout=60, check=False)
    assert done.returncode == 0
    assert [e["run"] for e in lines(path)] == [f"r{i}" for i in range(1000)]


KILLED = """
import sys, time
from pathlib import Path
from machine.runs import EventLog
path = Path(sys.argv[1])
log = EventLog(path)
for i in range(500):
    log.emit("graded", run=f"r{i}", machine="m", score=1.0, passed=True)
log.flush()
i = 500
while len(path.read_bytes().splitlines()) <= 500:  # the writer writes on its own, with no flush
    log.emit("graded", run=f"r{i}", machine="m", score=1.0, passed=True)
    i += 1
    time.sleep(0.001)
print(len(path.read_bytes().splitlines()), flush=True)
while True:
    log.emit("step", run=f"r{i}", machine="m", type="assistant", text="x" * 100, tool=None)
    i += 1
    time.sleep(0.001)
"""


def test_a_killed_process_loses_only_what_it_had_not_written(tmp_path: Path) -> None:
    """SIGKILL leaves every event written before it whole, and the events after them form no partial
    line: what is lost is the end (the last window's), never a line's half or an event in the middle."""
    path = tmp_path / EVENTS_FILE
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    written = int(child.stdout.readline())
    time.sleep(0.1)  # a few windows more, then killed wherever it is
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL
    data = path.read_bytes()
    assert data.endswith(b"\n")
    seen = lines(path)
    assert len(seen) >= written > 500
    assert [e["run"] for e in seen] == [f"r{i}" for i in range(len(seen))]  # nothing lost in between


def test_logs_of_one_file_share_its_queue(tmp_path: Path) -> None:
    """A workspace's copies each have a log of the same file: one flush writes what any of them emitted."""
    path = tmp_path / EVENTS_FILE
    first, second = EventLog(path), EventLog(path)
    first.emit("graded", run="r1", machine="m", score=1.0, passed=True)
    second.emit("graded", run="r2", machine="m", score=0.0, passed=False)
    EventLog(path).flush()
    assert [e["run"] for e in lines(path)] == ["r1", "r2"]


def test_a_full_log_is_rotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "MAX_BYTES", 1000)
    monkeypatch.setattr(events, "CHECK_EVERY", 1)
    path = tmp_path / EVENTS_FILE
    log = EventLog(path)
    for i in range(31):
        log.emit("step", run=f"r{i}", machine="m", type="assistant", text="x" * 100, tool=None)
    log.close()
    older = path.with_name(EVENTS_FILE + ".1")
    assert 800 < older.stat().st_size <= 1000 and path.stat().st_size <= 1000  # set aside before passing it
    assert [e["run"] for e in lines(path)][-1] == "r30"  # the newest in the new file
    assert len(lines(older)) + len(lines(path)) < 31  # older ones dropped: the log stays bounded


def test_a_log_that_cannot_be_written_is_turned_off_not_raised(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    log = EventLog(blocked / EVENTS_FILE)
    log.emit("graded", run="r", machine="m", score=1.0, passed=True)  # no error
    log.flush()  # nor here, where the write fails
    assert log.off
    log.emit("graded", run="r", machine="m", score=1.0, passed=True)
    log.close()
    assert log.off and not blocked.is_dir()


def test_machine_events_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_EVENTS", "off")
    EventLog(tmp_path / EVENTS_FILE).emit("graded", run="r", machine="m", score=1.0, passed=True)
    assert not (tmp_path / EVENTS_FILE).exists()
    assert os.listdir(tmp_path) == []


def test_every_field_is_a_preview_and_no_write_passes_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's 6 MB tool name, or a 1 MB result, is kept as a preview in every field; the file never
    passes its bound, checked before each write that could pass it (not only every CHECK_EVERY), a batch
    cut where the file is full."""
    monkeypatch.setattr(events, "MAX_BYTES", 4000)
    path = tmp_path / EVENTS_FILE
    log = EventLog(path)
    huge = "n" * 6_000_000
    for i in range(40):
        log.emit("step", run=f"r{i}", machine=huge, type="tool_call", text="x" * 1_000_000, tool=huge)
        if i % 7 == 6:  # batches of 7 lines, about 800 bytes each
            log.flush()
            assert path.stat().st_size <= 4000
    log.close()
    seen = lines(path) + lines(path.with_name(EVENTS_FILE + ".1"))
    assert seen and all(len(str(e[f])) == events.PREVIEW for e in seen for f in ("machine", "text", "tool"))
    assert path.with_name(EVENTS_FILE + ".1").stat().st_size <= 4000


def test_a_forked_child_writes_its_own_events_not_its_parents(tmp_path: Path) -> None:
    path = tmp_path / EVENTS_FILE
    log = EventLog(path)
    log.emit("graded", run="parent", machine="m", score=1.0, passed=True)
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        log.emit("graded", run="child", machine="m", score=1.0, passed=True)
        log.flush()
        os._exit(0)
    assert os.waitpid(child, 0)[1] == 0
    log.close()
    assert sorted(str(e["run"]) for e in lines(path)) == ["child", "parent"]
