"""Runs out as OpenTelemetry traces, for the backends people already watch (Phoenix, Jaeger, Tempo, ...).

Off unless an endpoint is named: ``MACHINE_OTEL_ENDPOINT`` (a collector's base URL, ``/v1/traces`` added),
else the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``;
``OTEL_SDK_DISABLED=true`` turns it off again. A run's process only notes each step's time as it goes
and, once the run is finished (and graded, when it is graded as it is made), hands its facts (plain
values, ``_trace_record``) to a feeder thread, which pickles batches down a pipe to one exporter process
per process (``_trace_export``): the span tree, the OpenTelemetry SDK, OTLP's encoding and the network are
all there, off the runs' thread and their interpreter's lock. Tracing never fails a run: a missing SDK is
said once and tracing stays off; a dead exporter or an unreachable endpoint only loses the traces.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._trace_record import Step, graded_facts, run_facts

if TYPE_CHECKING:
    from machine.runs import Event, Run

Listener = Callable[["Event"], None]
Settings = tuple[str, str, bool]
"""Which variable named the endpoint, its value, and whether content is captured."""

ENDPOINT_VARIABLES = (
    "MACHINE_OTEL_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)
CONTENT_VARIABLES = ("MACHINE_OTEL_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
"""Either turns content capture on (``1``/``true``): prompts, outputs, tool arguments and results."""
TRUTHY = frozenset(("1", "true", "yes", "on"))
WINDOW_S = 0.05
"""How long the feeder gathers finished runs before it sends them down in one write."""
MAX_PENDING = 100_000
"""Records held for the feeder; past that (an exporter that hangs) the oldest are dropped."""
EXPORTER = Path(__file__).with_name("_trace_export.py")
INSTALL = "pip install 'machine[otel]'"


def settings() -> Settings | None:
    """What the environment asks for now; None: tracing off. Asked at every run's start, so kept lean."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    for named in ENDPOINT_VARIABLES:
        value = env.get(named, "").strip()
        if value:
            content = any(env.get(v, "").strip().lower() in TRUTHY for v in CONTENT_VARIABLES)
            return named, value, content
    return None


class Tracer:
    """One exporter process and the feeder thread that sends it finished runs; never raises."""

    def __init__(self, chosen: Settings) -> None:
        self.settings = chosen
        self.content = chosen[2]
        self.pending: deque[dict[str, Any]] = deque(maxlen=MAX_PENDING)
        self.off = False
        self._lock = threading.Lock()
        """Held while writing to the exporter (the feeder, a flush, a close)."""
        self._wake = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._feeder: threading.Thread | None = None

    def send(self, record: dict[str, Any]) -> None:
        """Queue one run's record for the feeder (an append on the run's thread)."""
        if self.off:
            return
        self.pending.append(record)
        if self._feeder is None:
            self._start()
        self._wake.set()

    def flush(self, timeout: float = 10.0) -> bool:
        """Send what is pending and wait (``timeout`` at most) until the exporter has exported it all:
        whether it said so in time."""
        if self.off or self._process is None:
            return not self.off
        with self._lock:
            self._write_pending()
            self._frame("flush")
            return not self.off and self._heard(time.monotonic() + timeout)

    def _heard(self, deadline: float) -> bool:
        """Read the exporter's lines until its ``ok`` (True) or the deadline (False), saying once that
        traces could not be sent when it tells so; a deadline already past reads what is there."""
        out = self._process.stdout if self._process is not None else None
        while out is not None:
            ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
            line = out.readline() if ready else b""
            if line.startswith(b"failed"):
                where = line[7:].decode(errors="replace").strip()
                _say(f"runs' traces could not be sent to {where}; runs go on")
            elif line == b"ok\n" or not line:
                return line == b"ok\n"
        return False

    def close(self) -> None:
        """Send what is pending and close the pipe: the exporter exports the rest within its own bound
        and exits, not waited for, so no command ends later for it."""
        with self._lock:
            self._write_pending()
            if self._process is not None and not self.off:
                self._heard(0.0)  # a failure it already told
            if self._process is not None and self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            self.off = True

    def _start(self) -> None:
        with self._lock:
            if self._feeder is not None or self.off:
                return
            env = dict(os.environ)
            env[self.settings[0]] = self.settings[1]
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-P", str(EXPORTER)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,  # a Ctrl-C at the terminal is the run's, not the exporter's
                )
            except OSError as error:
                _say(f"traces are not sent: the exporter could not start ({error})")
                self.off = True
                return
            self._feeder = threading.Thread(target=self._feeding, name="machine-trace-feeder", daemon=True)
            self._feeder.start()

    def _feeding(self) -> None:
        while not self.off:
            self._wake.wait()
            time.sleep(WINDOW_S)
            self._wake.clear()
            with self._lock:
                self._write_pending()

    def _write_pending(self) -> None:
        records = [self.pending.popleft() for _ in range(len(self.pending))]
        if records:
            self._frame(records)

    def _frame(self, value: object) -> None:
        """One length-prefixed pickle down the pipe; an exporter gone turns tracing off."""
        if self.off or self._process is None or self._process.stdin is None:
            return
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._process.stdin.write(struct.pack(">I", len(data)) + data)
            self._process.stdin.flush()
        except (OSError, ValueError):
            self.off = True
            _say("traces are no longer sent: the exporter stopped")


_said: set[str] = set()
_tracer: Tracer | None = None
_choose = threading.Lock()


def _say(what: str) -> None:
    """Say a tracing problem once a process, on stderr: a trace is a convenience, a run goes on."""
    if what not in _said:
        _said.add(what)
        with contextlib.suppress(Exception):
            print(f"machine: {what}", file=sys.stderr)


def tracer() -> Tracer | None:
    """This process's tracer for the settings the environment asks for now (made on first use, made
    anew when they change), or None: off, or the SDK missing."""
    global _tracer
    chosen = settings()
    if chosen is None:
        return None
    if _tracer is not None and _tracer.settings == chosen:
        return None if _tracer.off else _tracer
    with _choose:
        if _tracer is not None and _tracer.settings != chosen:
            _tracer.close()
            _tracer = None
        if _tracer is None:
            _tracer = Tracer(chosen)
            if not _sdk_installed():
                _say(
                    f"{chosen[0]} is set but the OpenTelemetry SDK is not installed, so runs are not "
                    f"traced: {INSTALL}"
                )
                _tracer.off = True
    return None if _tracer.off else _tracer


def _sdk_installed() -> bool:
    try:
        found = importlib.util.find_spec("opentelemetry.sdk.trace")
        return (
            found is not None
            and importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
        )
    except (ImportError, ValueError):
        return False


class Recording:
    """The steps of one run as the harness makes them, each with its time: what its spans are made of."""

    __slots__ = ("root", "start", "steps", "tracer")

    def __init__(self, tracer: Tracer, root: Path | None) -> None:
        self.tracer, self.root = tracer, root
        self.start = time.time_ns()
        self.steps: list[Step] = []

    def listener(self, inner: Listener) -> Listener:
        """``inner``, after noting each whole step (a model's reply, a tool call starting, its result)."""
        steps = self.steps

        def listen(event: Event) -> None:
            if event.type != "text":
                steps.append((event.type, time.time_ns(), event.message, event.usage))
            inner(event)

        return listen

    def finish(self, run: Run) -> None:
        """Hand the finished run's record to the feeder; a record that cannot be made is dropped."""
        try:
            record = run_facts(run, self.steps, self.start, time.time_ns(), self.tracer.content, self.root)
        except Exception as error:
            _say(f"a run's trace was dropped ({type(error).__name__}: {error})")
            return
        self.tracer.send(record)


_recordings: dict[str, Recording] = {}
"""The runs being made in this process with tracing on, by id."""


def traced(run: Run, inner: Listener, root: Path | None = None) -> Listener:
    """``inner`` as is when tracing is off; else a listener that notes the run's steps for its trace."""
    found = tracer()
    if found is None:
        return inner
    recording = _recordings[run.id] = Recording(found, root)
    return recording.listener(inner)


def finished(run: Run) -> None:
    """The run is finished (graded too, when it was graded as it was made): its trace goes out."""
    recording = _recordings.pop(run.id, None) if _recordings else None
    if recording is not None:
        recording.finish(run)


def graded(run: Run) -> None:
    """A run graded after it was made: a ``grade`` span in the run's own trace carries the scorecard."""
    found = tracer()
    if found is not None and run.scorecard is not None:
        found.send(graded_facts(run, time.time_ns()))


def flush_traces(timeout: float = 10.0) -> bool:
    """Wait (``timeout`` seconds at most) until every run finished so far in this process has been
    exported: whether it was (True when tracing is off, there being nothing to wait for)."""
    current = _tracer
    return current is None or current.flush(timeout)


def _at_exit() -> None:
    if _tracer is not None:
        _tracer.close()


atexit.register(_at_exit)

__all__ = ["Recording", "Tracer", "finished", "flush_traces", "graded", "settings", "traced", "tracer"]
