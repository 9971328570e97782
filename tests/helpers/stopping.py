"""The real ``machine`` command run in the background with its output going to files, and stopped from
outside with one SIGINT, as a person's Ctrl-C stops it."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.env import MACHINE_BIN, clean_env

WAIT_S = 60.0
"""The longest a test waits for the command to get going (a loaded machine starts slowly)."""
STOP_S = 5.0
"""Ctrl-C must end the command within this long."""
NOISE = ("Traceback", "ExceptionGroup", "Exception ignored", "Aborted!")


@dataclass
class Started:
    """A ``machine`` command running in the background, its output going to files."""

    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def stopped(self, sig: int = signal.SIGINT, *, within: float = STOP_S * 4) -> tuple[int, float, str, str]:
        """Send ``sig`` once (SIGINT: a Ctrl-C); the exit status, how long it took to exit, and its output
        (killed once ``within`` seconds have passed)."""
        sent = time.monotonic()
        self.process.send_signal(sig)
        try:
            status = self.process.wait(timeout=within)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        took = time.monotonic() - sent
        return status, took, self.out.read_text(), self.err.read_text()


def interruptible() -> None:
    """Run in the child before it starts: SIGINT back to its default. A shell that starts a background job
    without job control (``make test &`` in a script) sets SIGINT to ignored, the child inherits that, and
    Python then installs no Ctrl-C handler at all, so the tests' SIGINT would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(tmp_path: Path, *args: str | Path, env: dict[str, str] | None = None) -> Started:
    """Run `machine ARGS` in `tmp_path`, in the scrubbed environment plus `env`."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [str(MACHINE_BIN), *map(str, args)],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=clean_env(env),
            cwd=tmp_path,
            preexec_fn=interruptible,
        )
    return Started(process, out, err)
