"""The exporter process of a process whose runs are traced (``_tracing``): reads runs' facts (pickled, each
frame length-prefixed) on stdin, makes them span trees (``_trace_spans``) and the spans through the
OpenTelemetry SDK with the times they were noted, and exports them by OTLP/HTTP through a
``BatchSpanProcessor``. A ``"flush"`` frame is answered ``ok`` on stdout once what came before it was
exported; at the end of stdin it exports what is left (``MAX_FLUSH_S`` at most) and exits. Run as a
script (``python -P``), so it imports no ``machine`` code: ``_trace_spans`` is loaded by its path.

It keeps out of the runs' way: its pipe is read as soon as it is written (``Inbox``), so the parent never
waits for spans to be made, and it runs at a lower priority (``nice`` 10), so on a busy machine the runs'
process has the processors first and the traces come a little later.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pickle
import random
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

EXPORT_TIMEOUT_S = 5.0
"""One export's bound unless ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` or ``OTEL_EXPORTER_OTLP_TIMEOUT`` says."""
MAX_FLUSH_S = 10.0
"""The most a flush (asked, or at the end) waits for the exports."""
MAX_INBOX_BYTES = 256 * 1024 * 1024
"""What the exporter holds of what it was sent and has not made spans of yet."""
FLUSH = pickle.dumps("flush", protocol=pickle.HIGHEST_PROTOCOL)


def _tree_maker() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``_trace_spans.tree_of``, from the file beside this one."""
    found = importlib.util.spec_from_file_location(
        "machine_trace_spans", Path(__file__).with_name("_trace_spans.py")
    )
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    made: Callable[[dict[str, Any]], dict[str, Any]] = module.tree_of
    return made


class ChosenIds(IdGenerator):
    """Random ids, except the run span's, which come from the run's id (set just before it starts)."""

    def __init__(self) -> None:
        self.chosen: tuple[int, int] | None = None

    def generate_trace_id(self) -> int:
        return self.chosen[0] if self.chosen is not None else random.getrandbits(128)

    def generate_span_id(self) -> int:
        chosen, self.chosen = self.chosen, None
        return chosen[1] if chosen is not None else random.getrandbits(64)


class Telling(SpanExporter):
    """The OTLP exporter, telling the parent once (a ``failed`` line on stdout, which it says on its
    stderr) that traces could not be sent, instead of the SDK's log line at every batch. The exporter's
    own stderr is closed: a command whose output is captured never waits on it."""

    def __init__(self, inner: SpanExporter, where: str) -> None:
        self.inner, self.where, self.said = inner, where, False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS and not self.said:
            self.said = True
            tell(f"failed {self.where}")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def exporter() -> SpanExporter:
    """OTLP/HTTP to ``MACHINE_OTEL_ENDPOINT`` (``/v1/traces`` added to a base URL), else wherever the
    standard ``OTEL_EXPORTER_OTLP_*`` variables say (the SDK reads them itself)."""
    env = os.environ
    base = env.get("MACHINE_OTEL_ENDPOINT", "").strip()
    endpoint = None
    if base:
        endpoint = base if base.rstrip("/").endswith("/v1/traces") else base.rstrip("/") + "/v1/traces"
    timeout = (
        None
        if ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" in env or "OTEL_EXPORTER_OTLP_TIMEOUT" in env)
        else EXPORT_TIMEOUT_S
    )
    where = (
        endpoint
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    )
    return Telling(OTLPSpanExporter(endpoint=endpoint, timeout=timeout), where)


def made(tracer: trace.Tracer, ids: ChosenIds, tree: dict[str, Any]) -> None:
    """The spans of one tree: the root (its ids chosen, or a child of a given parent), then its children."""
    context = None
    if tree.get("parent") is not None:
        trace_id, span_id = tree["parent"]
        parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        context = trace.set_span_in_context(NonRecordingSpan(parent))
    else:
        ids.chosen = tree["ids"]
    root = tracer.start_span(
        tree["name"], context=context, start_time=tree["start"], attributes=tree["attributes"]
    )
    ids.chosen = None
    inside = trace.set_span_in_context(root)
    for child in tree["children"]:
        span = tracer.start_span(
            child["name"], context=inside, start_time=child["start"], attributes=child["attributes"]
        )
        _ended(span, child)
    _ended(root, tree)


def _ended(span: trace.Span, tree: dict[str, Any]) -> None:
    if tree.get("error") is not None:
        span.set_status(Status(StatusCode.ERROR, str(tree["error"])))
    span.end(end_time=max(tree["end"], tree["start"]))


_telling = threading.Lock()


def tell(line: str) -> None:
    """One line to the parent (the main thread's ``ok``, the processor's ``failed``), whole."""
    with _telling:
        sys.stdout.buffer.write(line.encode() + b"\n")
        sys.stdout.buffer.flush()


class Inbox:
    """What the parent sent, read off the pipe as soon as it is written (a thread of its own), so a parent
    never waits on a full pipe while spans are made; at most ``MAX_INBOX_BYTES`` held, the newest frames
    dropped past that (an exporter far behind loses traces, never the parent's time)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.frames: deque[bytes | None] = deque()
        self.held = 0
        self.ready = threading.Condition()
        threading.Thread(target=self._reading, name="machine-trace-inbox", daemon=True).start()

    def _reading(self) -> None:
        while len(head := self.stream.read(4)) == 4:
            (size,) = struct.unpack(">I", head)
            data = self.stream.read(size)
            if len(data) < size:
                break
            with self.ready:
                if self.held + size > MAX_INBOX_BYTES and data != FLUSH:
                    continue
                self.held += size
                self.frames.append(data)
                self.ready.notify()
        with self.ready:
            self.frames.append(None)
            self.ready.notify()

    def __iter__(self) -> Iterator[Any]:
        """Each value the parent sent, in order, until the end of the stream."""
        while True:
            with self.ready:
                while not self.frames:
                    self.ready.wait()
                data = self.frames.popleft()
                self.held -= len(data or b"")
            if data is None:
                return
            yield pickle.loads(data)


def main() -> None:
    if hasattr(os, "nice"):  # background work: the runs' process comes first for the processors
        os.nice(10)
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # said once by Telling instead
    ids = ChosenIds()
    name = os.environ.get("OTEL_SERVICE_NAME") or "machine"
    provider = TracerProvider(resource=Resource.create({"service.name": name}), id_generator=ids)
    provider.add_span_processor(
        BatchSpanProcessor(exporter(), max_queue_size=65_536, max_export_batch_size=512)
    )
    tracer = provider.get_tracer("machine")
    tree_of = _tree_maker()
    for value in Inbox(sys.stdin.buffer):
        if value == "flush":
            provider.force_flush(int(MAX_FLUSH_S * 1000))
            tell("ok")
            continue
        for facts in value:
            try:
                made(tracer, ids, tree_of(facts))
            except Exception as error:  # one bad tree loses its own trace only
                print(
                    f"machine: a run's trace was dropped ({type(error).__name__}: {error})", file=sys.stderr
                )
    provider.force_flush(int(MAX_FLUSH_S * 1000))
    os._exit(0)  # the processor's thread is not waited for past the flush's bound


if __name__ == "__main__":
    main()
