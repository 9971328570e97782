"""Starting a sandboxed command: synchronously, under its caps from its first instruction (``Admission``).

anyio's ``open_process`` cannot do it. On cgroup v1 the starting thread is in the command's groups while
it starts the command, and there the event loop may neither run another task (anyio checks for
cancellation before it starts a process) nor make a thread (asyncio's child watcher makes one for each
process, which would be born in the group). So the command is started with Popen in one call, with no
program in front of it and without a fork where the child has nothing to do (vfork, as Popen does), and
read and waited on here through anyio: its output through non-blocking pipes, its exit through a pidfd.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc

from ._admission import Admission, NotAdmitted


def start(
    argv: Sequence[str],
    admission: Admission,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
) -> Started:
    """``argv`` started in a new session (``kill_tree`` kills it whole) with stdin ``/dev/null``, under
    the caps of ``admission``; NotAdmitted where it could not be put under them (then nothing ran),
    OSError where the program could not be started."""
    out, out_child = os.pipe2(os.O_CLOEXEC)
    err, err_child = os.pipe2(os.O_CLOEXEC)
    popen = None
    try:
        with admission.moved():
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out_child,
                stderr=err_child,
                cwd=cwd,
                env=env,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                preexec_fn=admission.child,
            )
        return Started(popen, out, err)
    except BaseException as error:
        if popen is not None:  # started, but not as it must run (this thread still in its group)
            with contextlib.suppress(OSError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
        for fd in (out, err):
            os.close(fd)
        if isinstance(error, subprocess.SubprocessError):  # raised in the child, before it ran anything
            raise NotAdmitted(admission.error() or error) from error
        raise
    finally:
        os.close(out_child)
        os.close(err_child)


class Started(anyio.abc.Process):
    """A command started by ``start``, as anyio's processes are used: ``wait`` reaps it, ``aclose``
    closes its pipes and reaps it; one task at a time waits on it or reads each of its streams."""

    def __init__(self, popen: subprocess.Popen[bytes], out: int, err: int) -> None:
        self._popen = popen
        self._exited = os.pidfd_open(popen.pid)  # readable once it has exited
        self._stdout = _Pipe(out)
        self._stderr = _Pipe(err)

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            await anyio.wait_readable(self._exited)
        return code

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signal: signal.Signals) -> None:
        self._popen.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    @property
    def stdin(self) -> None:
        return None

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream:
        return self._stderr

    async def aclose(self) -> None:
        await self._stdout.aclose()
        await self._stderr.aclose()
        if self._exited >= 0:
            with anyio.CancelScope(shield=True):
                await self.wait()
            os.close(self._exited)
            self._exited = -1


class _Pipe(anyio.abc.ByteReceiveStream):
    """The read end of a command's stdout or stderr, read without blocking."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._fd < 0:
            raise anyio.ClosedResourceError
        while True:
            await anyio.wait_readable(self._fd)  # also the checkpoint that keeps a chatty command fair
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if self._fd >= 0:
            anyio.notify_closing(self._fd)
            os.close(self._fd)
            self._fd = -1
