"""The event log: one JSON line an event, private, appended by several processes at once without a line
ever broken, rotated past its size, and turned off (never failing a run) when it cannot be written."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
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
import sys
from pathlib import Path
from machine.runs import EventLog
log = EventLog(Path(sys.argv[1]))
for i in range(300):
    log.emit("step", run=sys.argv[2], machine="m", type="assistant", text=sys.argv[2] * 2000, tool=None)
"""


def test_several_processes_append_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / EVENTS_FILE
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name]) for name in ("a", "b", "c")]
    for writer in writers:
        assert writer.wait(timeout=60) == 0
    seen = lines(path)  # every line parses: no two writes interleaved
    assert len(seen) == 900
    assert {str(e["run"]) for e in seen} == {"a", "b", "c"}
    assert all(
        e["text"] == str(e["run"]) * (events.PREVIEW - 1) + "…" or len(str(e["text"])) == 2000 for e in seen
    )


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
    log.emit("graded", run="r", machine="m", score=1.0, passed=True)
    assert log._off


def test_machine_events_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_EVENTS", "off")
    EventLog(tmp_path / EVENTS_FILE).emit("graded", run="r", machine="m", score=1.0, passed=True)
    assert not (tmp_path / EVENTS_FILE).exists()
    assert os.listdir(tmp_path) == []


def test_every_field_is_a_preview_and_no_write_passes_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's 6 MB tool name, or a 1 MB result, is kept as a preview in every field; the file never
    passes its bound, checked before each write that could pass it (not only every CHECK_EVERY)."""
    monkeypatch.setattr(events, "MAX_BYTES", 4000)
    path = tmp_path / EVENTS_FILE
    log = EventLog(path)
    huge = "n" * 6_000_000
    for i in range(40):
        log.emit("step", run=f"r{i}", machine=huge, type="tool_call", text="x" * 1_000_000, tool=huge)
        assert path.stat().st_size <= 4000
    log.close()
    seen = lines(path) + lines(path.with_name(EVENTS_FILE + ".1"))
    assert seen and all(len(str(e[f])) == events.PREVIEW for e in seen for f in ("machine", "text", "tool"))
    assert path.with_name(EVENTS_FILE + ".1").stat().st_size <= 4000
