"""How a command ends when the person stops it (Ctrl-C) or the reader of its output goes away (``| head``):
with a line on stderr that says what was kept, an exit status that says why, and never a traceback.

The first Ctrl-C cancels the command's event loop: work in flight is cancelled, what finished is written,
and the command ends here. A second Ctrl-C, while that is under way, stops it at once. A command that
trains takes SIGTERM (``timeout``, ``kill``, a CI runner) the same way (``stop_on_sigterm``), ending with
143, so a training stopped so is recorded as one stopped by Ctrl-C is.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any, NoReturn

import click
from click.core import ParameterSource

INTERRUPTED = 130
"""128 + SIGINT: the status shells give a command stopped by Ctrl-C."""
BROKEN_PIPE = 141
"""128 + SIGPIPE: the status shells give a command whose reader closed the pipe (``git log | head``)."""
TERMINATED = 143
"""128 + SIGTERM: the status of a command stopped by SIGTERM, once it has recorded what it did."""
_TERMINATED: list[int] = []
"""Holds the signal once SIGTERM has come (``stop_on_sigterm``): the stop that follows is its."""


def stop_on_sigterm() -> None:
    """Take SIGTERM as a Ctrl-C: the command's event loop is cancelled, what it did is recorded, and it
    ends with ``TERMINATED``. SIGTERM's own default would end the process on the spot, a training's
    record left saying nothing of where it stopped."""
    import signal  # an enum module: loaded by the commands that train, not by every command

    def stop(signum: int, frame: FrameType | None) -> None:
        _TERMINATED.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # the event loop's (it cancels the command), or Python's (it raises)
            handler(signal.SIGINT, frame)
        else:  # Ctrl-C ignored (a background job): stop all the same
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def stopped_word(status: int) -> list[str]:
    """The line a stopped command ends with: ``interrupted`` (Ctrl-C), ``terminated`` (SIGTERM)."""
    return {INTERRUPTED: ["interrupted"], TERMINATED: ["terminated"]}.get(status, [])


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside ``error``, through any exception groups (a task group's)."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def stop_status(error: BaseException) -> int | None:
    """The exit status when ``error`` means the command was stopped from outside: a Ctrl-C anywhere in it,
    or output that could not be written because its reader went away. None for any other error."""
    leaves = list(_leaves(error))
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return TERMINATED if _TERMINATED else INTERRUPTED
    if leaves and all(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        return BROKEN_PIPE
    return None


def _to_devnull(stream: object) -> None:
    """Point a closed pipe's file descriptor at /dev/null, so the interpreter's last flush of what is
    still buffered succeeds instead of printing "Exception ignored"."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test runner's buffer): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def say(lines: Iterable[str]) -> None:
    """Print on stderr, quietly giving up where stderr is a closed pipe too."""
    try:
        for line in lines:
            click.echo(line, err=True)
        sys.stderr.flush()
    except BrokenPipeError:
        _to_devnull(sys.stderr)


def end(status: int, lines: Iterable[str] = ()) -> NoReturn:
    """End the command with ``status`` after printing ``lines`` on stderr; after a closed stdout, nothing
    more is written to it."""
    if status == BROKEN_PIPE:
        _to_devnull(sys.stdout)
    stopped = status in (INTERRUPTED, TERMINATED)
    if stopped:  # the first Ctrl-C (or SIGTERM) was handled: another one quits at once, without a word
        import signal  # an enum module: loaded by a command that is stopped, not by every command

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    say(lines)
    if stopped and _working_threads():
        _quit_now(status)
    sys.exit(status)


def _working_threads() -> bool:
    """Whether a thread other than the main one is still alive: a local model's generator, or a worker
    abandoned mid-call by the cancel."""
    import threading

    runs = _runs()
    writer = runs.EventLog.WRITER if runs is not None else None  # the event log's: it only waits
    others = (t for t in threading.enumerate() if t is not threading.main_thread())
    return any(t.is_alive() for t in others if t.name != writer)


def _runs() -> Any:
    """``machine.runs`` where a command loaded it (one that ran anything did), else None: looked up, not
    imported, so ``machine --help`` loads no more than it needs."""
    return sys.modules.get("machine.runs")


def _quit_now(status: int) -> NoReturn:
    """Exit without the interpreter's teardown, everything kept already written. Tearing down under a
    thread still in a model library's native code aborts the process (``terminate called without an
    active exception``, status 134) instead of ending it with ``status``."""
    if (runs := _runs()) is not None:
        runs.EventLog.flush_all()  # the events atexit would have written
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def resume_command(ctx: click.Context, name: str, suite_id: str, *, leave_out: Iterable[str] = ()) -> str:
    """The command that continues suite ``suite_id`` of ``name``: this command again, with every option the
    person typed (and ``--workspace``), and ``--resume SUITE_ID`` in place of any ``--resume`` given."""
    skip = {"name", "resume", *leave_out}
    words = ["machine", ctx.info_name or "suite", name]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name is None or param.name in skip:
            continue
        if not param.expose_value:  # --workspace: where it was typed, the root keeps it (below)
            continue
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        words.extend(_option_words(param, ctx.params[param.name]))
    workspace = (ctx.find_root().obj or {}).get("workspace")
    if workspace is not None:
        words += ["--workspace", str(workspace)]
    return shlex.join([*words, "--resume", suite_id])


def _option_words(param: click.Option, value: object) -> list[str]:
    """How ``value`` of ``param`` is typed on the command line."""
    flag = max(param.opts, key=len)
    if param.is_flag and not param.secondary_opts:
        return [flag] if value else []
    if param.is_flag:
        return [flag] if value else [max(param.secondary_opts, key=len)]
    values = value if param.multiple and isinstance(value, tuple | list) else [value]
    return [word for v in values for word in (flag, str(v))]
