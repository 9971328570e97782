"""A command in a real pseudo-terminal: what a person at a terminal types and sees, with every wait
bounded. ``expect`` reads until a text appears (or fails with what was seen), ``send`` types a line.
``seen`` is the text with colours left out; ``raw`` every byte the terminal was sent, escapes and all."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PtySession:
    """One process on the slave side of a pty; its output, read from the master, kept whole."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float = 60) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True
        )
        os.close(slave)
        self.timeout = timeout
        self.seen = ""
        self.raw = b""
        self.read_to = 0

    def _read(self, until: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the process ended and closed the terminal
            return False
        self.raw += chunk
        self.seen += ANSI.sub("", chunk.decode("utf-8", "replace")).replace("\r\n", "\n")
        return bool(chunk)

    def expect(self, text: str) -> str:
        """The output from the last match up to and including ``text``, once it appears."""
        until = time.monotonic() + self.timeout
        while text not in self.seen[self.read_to :]:
            if time.monotonic() > until or (not self._read(until) and self.process.poll() is not None):
                raise AssertionError(f"{text!r} never appeared; the terminal showed:\n{self.seen[-3000:]}")
        end = self.seen.index(text, self.read_to) + len(text)
        found, self.read_to = self.seen[self.read_to : end], end
        return found

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def interrupt(self) -> None:
        """Ctrl-C: the signal the terminal sends its foreground process (this terminal is not the
        process's controlling one, so the signal is sent to it directly)."""
        self.process.send_signal(signal.SIGINT)

    def kill(self) -> None:
        """End the process if it still runs (a test's clean-up)."""
        if self.process.poll() is None:
            self.process.kill()

    def close(self) -> int:
        """Wait for the process to end (killing it past the timeout), read what is left; its status."""
        until = time.monotonic() + self.timeout
        while self.process.poll() is None and time.monotonic() < until:
            self._read(min(until, time.monotonic() + 0.2))
        if self.process.poll() is None:
            self.process.kill()
        while self._read(time.monotonic() + 0.2):
            pass
        os.close(self.master)
        return self.process.wait(timeout=10)
