"""The event log: what every process that runs a machine is doing, appended to ``.machine/events.jsonl``
as it happens, for a watcher (the dashboard) to follow without anything else running.

One JSON object a line: ``at`` (seconds since the epoch, when it was emitted), ``kind`` and the kind's
fields (``EVENT_KINDS``). Emitting costs the caller only an append to a queue: the previews, the JSON and
the system call are not on its thread. One writer thread per process (started with the first event)
encodes what is pending every ``WINDOW_S`` and writes it in one ``write`` (``BATCH_BYTES`` at most, whole
lines) on a descriptor opened for appending, so lines from several processes never interleave; it writes
the rest on ``flush()``, ``close()`` and at exit. A process killed (SIGKILL, or SIGTERM's default) loses
at most the events of its last window, not yet written; one killed in the very middle of a large write
may leave that write cut short, one line that does not parse. The log is a convenience, never a reason
for a run to fail: a write that fails (a full disk, a read-only folder) turns the log off for this
process and nothing else. Every text field is a preview (``PREVIEW`` characters), so a line is small
whatever a model sent; a write that would take the file past ``MAX_BYTES`` first renames it to
``events.jsonl.1`` (the one before it dropped) and begins a new one, so each stays within the bound (past
it by at most what other processes appended since this one last looked, which it does every
``CHECK_EVERY`` writes). It holds previews of inputs and outputs, so it is private (0600) like the store.
``MACHINE_EVENTS=off`` turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

EVENTS_FILE = "events.jsonl"
MAX_BYTES = 32 * 1024 * 1024
"""The log's size past which it is rotated."""
CHECK_EVERY = 16
"""Writes (each a batch) between two looks at the log's size, which other processes append to too;
between them this process counts what it wrote itself."""
PREVIEW = 240
"""Characters of an input, an output or a step's text an event keeps."""
WINDOW_S = 0.01
"""How long the writer gathers events before it writes them: a watcher sees an event this much later
(plus the write), and a killed process loses at most this much."""
BATCH_BYTES = 1024 * 1024
"""The most one ``write`` holds (whole lines): a batch larger than that is written in several."""
MAX_PENDING = 100_000
"""Events a log holds for its writer; past that (a disk that hangs) the oldest are dropped."""

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

Pending = tuple[float, str, dict[str, Any]]


def _kept(value: Any) -> Any:
    """A field as the log keeps it: a number, a boolean or None as it is, anything else a preview."""
    if type(value) is str:  # the usual field, already a preview
        return value if len(value) <= PREVIEW else value[: PREVIEW - 1] + "…"
    if value is None or isinstance(value, bool | int | float):
        return value
    return preview(str(value))


def preview(text: str | None) -> str | None:
    """``text`` cut to ``PREVIEW`` characters (an ellipsis marks a cut)."""
    if text is None or len(text) <= PREVIEW:
        return text
    return text[: PREVIEW - 1] + "…"


class EventLog:
    """Appends events to one file; thread-safe; never raises. Every log of the same file in a process
    shares one descriptor and one queue, so a workspace's copies open nothing more."""

    WRITER = "machine-event-log"
    """The writer thread's name: a daemon that only waits for events, no work to wait for at exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._off = os.environ.get("MACHINE_EVENTS", "").strip().lower() == "off"
        self._file: _File | None = None

    def emit(self, kind: EventKind, **fields: Any) -> None:
        """Record one event for the writer, which keeps numbers, booleans and None as they are and
        anything else as a preview of its text (a caller passes long texts as previews already: held
        until the writer takes them, a few milliseconds)."""
        if self._off:
            return
        file = self._file or self._join()
        file.pending.append((time.time(), kind, fields))  # previews and JSON are the writer's work
        if not _wake.is_set():  # the first event of a window wakes the writer
            _wake_writer()

    def flush(self) -> None:
        """Write what is pending for this file now (any log of it in this process), after a write in
        progress: what a reader in this process sees next."""
        if (file := self._found()) is not None:
            file.write_pending()

    def close(self) -> None:
        """Write what is pending and close the descriptor (the next event opens it again)."""
        if (file := self._found()) is not None:
            file.write_pending()
            file.close()

    @property
    def off(self) -> bool:
        """Whether events are dropped: ``MACHINE_EVENTS=off``, or a write to this file failed."""
        file = self._found()
        return self._off or (file is not None and file.off)

    @staticmethod
    def flush_all() -> None:
        """Write every log's pending events: before an exit that skips ``atexit`` (``os._exit``)."""
        _write_all()

    def _found(self) -> _File | None:
        return self._file or _files.get(os.path.abspath(self.path))

    def _join(self) -> _File:
        key = os.path.abspath(self.path)
        with _registry:
            self._file = _files.get(key) or _files.setdefault(key, _File(self.path))
        return self._file


class _File:
    """One event log file in this process: its queue, its descriptor and what it knows of its size."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pending: deque[Pending] = deque(maxlen=MAX_PENDING)
        self.lock = threading.Lock()
        """Held while writing (by the writer, a flush, a close); never by an emitter."""
        self.off = False
        self._fd: int | None = None
        self._writes = 0
        self._size = 0
        """The file's size as this process last knew it, plus what it wrote since."""

    def write_pending(self) -> None:
        """Encode and write every pending event, in batches of whole lines, once the write in progress
        is done (its events are then written too); a failure turns the log off."""
        with self.lock:
            events = [self.pending.popleft() for _ in range(len(self.pending))]
            if self.off or not events:
                return
            try:
                self._write_lines([_line(*event) for event in events])
            except Exception:
                self.off = True  # a dashboard is a convenience: the run goes on without its log

    def close(self) -> None:
        with self.lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _write_lines(self, lines: list[str]) -> None:
        """Write ``lines`` in as few writes as fit ``BATCH_BYTES`` and the room left before ``MAX_BYTES``
        (JSON's ASCII text: a character is a byte)."""
        batch: list[str] = []
        size = 0
        for line in lines:
            if batch and (size + len(line) > BATCH_BYTES or self._size + size + len(line) > MAX_BYTES):
                self._write("".join(batch).encode("ascii"))
                batch, size = [], 0
            batch.append(line)
            size += len(line)
        if batch:
            self._write("".join(batch).encode("ascii"))

    def _write(self, data: bytes) -> None:
        fd = self._open()
        if self._writes % CHECK_EVERY == 0 or self._size + len(data) > MAX_BYTES:
            self._size = os.fstat(fd).st_size
        if self._size + len(data) > MAX_BYTES:
            self._rotate()
            fd = self._open()
            self._size = os.fstat(fd).st_size
        if os.write(fd, data) != len(data):
            raise OSError("the event log took part of a write")  # a partial line: better off
        self._writes += 1
        self._size += len(data)

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


def _line(at: float, kind: str, fields: dict[str, Any]) -> str:
    entry: dict[str, Any] = {"at": round(at, 6), "kind": kind}
    for name, value in fields.items():
        entry[name] = _kept(value)
    return _encode(entry) + "\n"


def _encoder() -> Callable[[dict[str, Any]], str]:
    """``json.dumps``'s own C encoder, made once instead of once an event (a quarter of an event's cost);
    ``json.dumps`` itself where this Python's differs (checked on a sample)."""
    sample = {"text": 'é\n"', "score": 0.5, "n": 3, "passed": True, "error": None}
    try:
        made = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
            None,
            json.JSONEncoder().default,
            json.encoder.encode_basestring_ascii,
            None,
            ": ",
            ", ",
            False,
            False,
            True,
        )
        if "".join(made(sample, 0)) == json.dumps(sample):
            return lambda entry: "".join(made(entry, 0))
    except (AttributeError, TypeError):
        pass
    return json.dumps


_encode = _encoder()


_files: dict[str, _File] = {}
"""Every event log file this process has emitted to, by absolute path."""
_registry = threading.Lock()
_wake = threading.Event()
"""Set by the first event of a window; cleared by the writer just before it takes what is pending."""
_writer: threading.Thread | None = None


def _wake_writer() -> None:
    """Start the writer on the first event (again in a forked child), and wake it. A thread that cannot
    start (at interpreter shutdown, out of threads) leaves the events to ``flush()`` and the exit."""
    global _writer
    if _writer is None:
        with _registry:
            if _writer is None:
                writer = threading.Thread(target=_writing, name=EventLog.WRITER, daemon=True)
                with contextlib.suppress(RuntimeError):
                    writer.start()
                    _writer = writer
    _wake.set()


def _writing() -> None:
    """The writer: wakes with a window's first event, lets the window gather, writes every file's events."""
    while True:
        _wake.wait()
        time.sleep(WINDOW_S)
        _wake.clear()
        for file in list(_files.values()):
            if file.pending:
                file.write_pending()


def _write_all() -> None:
    """Every file's pending events, each after its write in progress: at exit, none is cut short."""
    for file in list(_files.values()):
        file.write_pending()


def _forked() -> None:
    """A forked child leaves what was pending to its parent and starts with fresh locks and no writer."""
    global _writer, _wake, _registry
    _writer, _wake, _registry = None, threading.Event(), threading.Lock()
    for file in _files.values():
        file.pending.clear()
        file.lock = threading.Lock()


atexit.register(_write_all)
os.register_at_fork(after_in_child=_forked)

__all__ = ["EVENTS_FILE", "EVENT_KINDS", "MAX_BYTES", "WINDOW_S", "EventKind", "EventLog", "preview"]
