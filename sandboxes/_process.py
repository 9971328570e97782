"""Waiting on a sandboxed command: its time limit, the kill of its process tree, its capped output.

A chatty command must neither block on a full pipe nor fill our memory, and nothing it starts may
outlive it (under bubblewrap; see docs/sandboxes.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

import anyio
import anyio.abc

DRAIN_GRACE_S = 1.0
"""After the command ends, how long to wait for the last of its output (held open only by a process
that escaped the kill, which only happens without bubblewrap)."""


class Capture:
    """Keeps the first ``limit`` characters of a stream and drains the rest, counting it, so that a
    chatty command neither blocks on a full pipe nor fills our memory."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.done = anyio.Event()

    async def drain(self, stream: anyio.abc.ByteReceiveStream) -> None:
        """Read ``stream`` to its end, keeping what fits; ``done`` is set when it ends."""
        try:
            async for chunk in stream:
                self.total += len(chunk)
                room = self.limit * 4 - self.kept  # bytes: up to 4 per character
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.kept += min(room, len(chunk))
        finally:
            self.done.set()

    @property
    def truncated(self) -> bool:
        """Whether some of the stream was left out."""
        return self.total > self.kept or len(self._decoded()) > self.limit

    def _decoded(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def text(self) -> str:
        """What was kept, ending with a note when the stream was cut."""
        text = self._decoded()
        if self.total == self.kept and len(text) <= self.limit:
            return text
        return text[: self.limit] + f"\n[output cut at {self.limit:,} characters of {self.total:,} bytes]"


async def wait_capped(
    process: anyio.abc.Process,
    timeout_s: float,
    max_output: int,
    kill_group: Callable[[], None] = lambda: None,
) -> tuple[Capture, Capture, bool]:
    """Wait at most ``timeout_s`` for ``process``, then kill its process tree (``kill_group`` kills the
    cgroup it runs in) and read the last of its output: its stdout, its stderr and whether it timed
    out. The process is reaped, even on cancel."""
    out, err = Capture(max_output), Capture(max_output)

    def kill_all() -> None:
        kill_tree(process)
        kill_group()

    try:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as readers:
            readers.start_soon(out.drain, process.stdout)
            readers.start_soon(err.drain, process.stderr)
            with anyio.move_on_after(timeout_s) as limit:
                await process.wait()
            timed_out = limit.cancelled_caught
            # Whatever the command left behind goes with it (under bubblewrap the namespace is
            # already going); then read what they wrote, without waiting on one that escaped.
            kill_all()
            with anyio.move_on_after(DRAIN_GRACE_S):
                await out.done.wait()
                await err.done.wait()
            readers.cancel_scope.cancel()
    finally:
        kill_all()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
    return out, err, timed_out


def kill_tree(process: anyio.abc.Process) -> None:
    """SIGKILL the command's process group. Under bubblewrap that group holds bubblewrap itself, and
    its death takes the init of the command's PID namespace and with it every process there, even
    one that left the group; without bubblewrap a process that called ``setsid`` is out of reach."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
