"""The event log: what every process that runs a machine is doing, appended to ``.machine/events.jsonl``
as it happens, for a watcher (the dashboard) to follow without anything else running.

One JSON object a line: ``at`` (seconds since the epoch), ``kind`` and the kind's fields (``EVENT_KINDS``).
Each line is one ``write`` on a descriptor opened for appending, so lines from several processes never
interleave. The log is a convenience, never a reason for a run to fail: a write that fails (a full
disk, a read-only folder) turns the log off for this process and nothing else. Every text field is a
preview (``PREVIEW`` characters), so a line is small whatever a model sent; a write that would take the
file past ``MAX_BYTES`` first renames it to ``events.jsonl.1`` (the one before it dropped) and begins a
new one, so each stays within the bound (past it by at most what other processes appended since this
one last looked, which it does every ``CHECK_EVERY`` writes). It holds previews of inputs and outputs,
so it is private (0600) like the store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

EVENTS_FILE = "events.jsonl"
MAX_BYTES = 32 * 1024 * 1024
"""The log's size past which it is rotated."""
CHECK_EVERY = 64
"""Writes between two looks at the log's size, which other processes append to too (a look costs as
much as a write); between them this process counts what it wrote itself."""
PREVIEW = 240
"""Characters of an input, an output or a step's text an event keeps."""

EventKind = Literal["run_started", "step", "run_finished", "graded", "training_step", "checkpoint"]
EVENT_KINDS: dict[str, str] = {
    "run_started": "run, machine, version, model, harness, case_id, trial, input",
    "step": "run, machine, type (assistant, tool_call, tool_result), text, tool",
    "run_finished": "run, machine, status, error, cost_usd, score, output",
    "graded": "run, machine, score, passed (a run graded on its own; one graded as it is made says its "
    "score in run_finished)",
    "training_step": "record, machine, steps (planned), and the step's metrics: step, epoch, loss, "
    "sequences, tokens, learning_rate, seconds, cost_usd",
    "checkpoint": "record, machine, step, model",
}
"""Each kind of event and the fields it carries (besides ``at`` and ``kind``)."""


def _kept(value: Any) -> Any:
    """A field as the log keeps it: a number, a boolean or None as it is, anything else a preview."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return preview(value if isinstance(value, str) else str(value))


def preview(text: str | None) -> str | None:
    """``text`` cut to ``PREVIEW`` characters (an ellipsis marks a cut)."""
    if text is None or len(text) <= PREVIEW:
        return text
    return text[: PREVIEW - 1] + "…"


class EventLog:
    """Appends events to one file; thread-safe; never raises."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._off = os.environ.get("MACHINE_EVENTS", "").strip().lower() == "off"
        self._lock = threading.Lock()
        self._writes = 0
        self._size = 0
        """The file's size as this process last knew it, plus what it wrote since."""

    def emit(self, kind: EventKind, **fields: Any) -> None:
        """Append one event: numbers, booleans and None as they are, anything else as a preview of its
        text."""
        if self._off:
            return
        kept = {name: _kept(value) for name, value in fields.items()}
        line = json.dumps({"at": round(time.time(), 6), "kind": kind, **kept})
        data = (line.replace("\n", " ") + "\n").encode()
        with self._lock:
            try:
                fd = self._open()
                if self._writes % CHECK_EVERY == 0 or self._size + len(data) > MAX_BYTES:
                    self._size = os.fstat(fd).st_size
                if self._size + len(data) > MAX_BYTES:
                    self._rotate()
                    fd = self._open()
                    self._size = os.fstat(fd).st_size
                os.write(fd, data)
                self._writes += 1
                self._size += len(data)
            except OSError:
                self._off = True  # a dashboard is a convenience: the run goes on without its log

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return self._fd

    def _rotate(self) -> None:
        """Rename the full log aside and begin a new one (another process may have done it first: the
        file is renamed only while it is still the full one)."""
        assert self._fd is not None
        full = os.fstat(self._fd)
        os.close(self._fd)
        self._fd = None
        try:
            now = self.path.stat()
            if (now.st_ino, now.st_dev) == (full.st_ino, full.st_dev):
                os.replace(self.path, self.path.with_name(EVENTS_FILE + ".1"))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


__all__ = ["EVENTS_FILE", "EVENT_KINDS", "MAX_BYTES", "EventKind", "EventLog", "preview"]
