"""Following a workspace as it changes: the event log (``.machine/events.jsonl``) read as it grows, and
the store's ``data_version`` polled, each a few times a second, in one task for every page open.

The runs in progress are kept from the log (started, not yet finished), each with its latest steps, so
the "running now" page needs nothing else; they are bounded (the oldest dropped past ``MAX_RUNNING``, a
run silent for ``STALE_S`` forgotten, ``MAX_STEPS`` steps each), so memory stays flat however long the
dashboard runs. Each subscriber has a bounded queue: one that falls behind misses events, never holds
memory. A log that is rotated or replaced is followed from its new start.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

POLL_S = 0.1
"""How often the log and the store are looked at."""
MAX_RUNNING = 200
MAX_STEPS = 50
STALE_S = 3600.0
START_TAIL = 256 * 1024
"""How much of an existing log is read at the start, to know the runs already in progress."""
QUEUE = 256
"""Events a subscriber may fall behind by before it misses some."""
Sender = MemoryObjectSendStream[dict[str, Any]]
Receiver = MemoryObjectReceiveStream[dict[str, Any]]


@dataclass
class Running:
    """One run in progress, as the log tells it."""

    started: dict[str, Any]
    steps: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_STEPS))
    seen: float = field(default_factory=time.time)

    def shown(self) -> dict[str, Any]:
        return {**self.started, "steps": list(self.steps), "last_seen": self.seen}


class Follower:
    """Reads what changed since the last look and tells every subscriber."""

    def __init__(self, events: Path, data_version: Callable[[], int]) -> None:
        self.path = events
        self.data_version = data_version
        self.running: OrderedDict[str, Running] = OrderedDict()
        self.subscribers: set[Sender] = set()
        self._inode: int | None = None
        self._offset = 0
        self._partial = b""
        self._version: int | None = None
        self._lock = threading.Lock()

    def subscribe(self) -> tuple[Sender, Receiver]:
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](QUEUE)
        self.subscribers.add(send)
        return send, receive

    def unsubscribe(self, send: Sender) -> None:
        self.subscribers.discard(send)

    def start_at_tail(self) -> None:
        """Read the last ``START_TAIL`` bytes of the log (runs in progress now), then follow from its end."""
        with contextlib.suppress(OSError):
            self._offset = max(0, self.path.stat().st_size - START_TAIL)
        for event in self._read():  # a first line cut by the tail's start does not parse: dropped
            with self._lock:
                self._keep(event)

    async def run(self) -> None:
        """Poll until cancelled."""
        while True:
            events = await anyio.to_thread.run_sync(self.poll)
            for event in events:
                self._tell(event)
            await anyio.sleep(POLL_S)

    def poll(self) -> list[dict[str, Any]]:
        """What changed since the last poll: the log's new events, and ``{"kind": "store"}`` once when
        the store was written."""
        found = self._read()
        with self._lock:
            for event in found:
                self._keep(event)
        version: int | None
        try:
            version = self.data_version()
        except Exception:  # a store busy or gone for a moment: looked at again next time
            version = self._version
        if self._version is not None and version != self._version:
            found.append({"kind": "store", "at": time.time()})
        self._version = version
        return found

    def _read(self) -> list[dict[str, Any]]:
        try:
            stat = self.path.stat()
        except OSError:
            return []
        if self._inode is not None and (stat.st_ino != self._inode or stat.st_size < self._offset):
            self._offset, self._partial = 0, b""  # rotated or replaced: its new start
        self._inode = stat.st_ino
        if stat.st_size <= self._offset:
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read(min(stat.st_size - self._offset, 4 * 1024 * 1024))
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by the tail's start, or not the log's
            if isinstance(event, dict) and isinstance(event.get("kind"), str):
                events.append(event)
        return events

    def _keep(self, event: dict[str, Any]) -> None:
        """Update the runs in progress with ``event`` (under the lock: pages read them meanwhile)."""
        kind, run = event.get("kind"), event.get("run")
        now = time.time()
        if kind == "run_started" and isinstance(run, str):
            self.running[run] = Running(event)
            while len(self.running) > MAX_RUNNING:
                self.running.popitem(last=False)
        elif kind == "step" and isinstance(run, str) and run in self.running:
            self.running[run].steps.append(event)
            self.running[run].seen = now
        elif kind == "run_finished" and isinstance(run, str):
            self.running.pop(run, None)
        for stale in [r for r, v in self.running.items() if now - v.seen > STALE_S]:
            del self.running[stale]

    def _tell(self, event: dict[str, Any]) -> None:
        for send in list(self.subscribers):
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(event)

    def in_progress(self) -> list[dict[str, Any]]:
        """The runs in progress, newest first."""
        with self._lock:
            return [r.shown() for r in reversed(self.running.values())]


__all__ = ["Follower", "Running"]
