"""A local server that speaks the OpenAI chat-completions protocol, for tests and benchmarks.

No machine here reaches Tinker or OpenRouter, so the real client code is tested against this instead:
only the base URL differs. It listens on 127.0.0.1 (a free port), answers ``POST .../chat/completions``
under any prefix (``/v1``, Tinker's ``/oai/api/v1``, OpenRouter's ``/api/v1``), plain or streamed (SSE),
plays a queue of scripted replies and injects faults on demand, reports whatever usage a test
chooses (``Reply.raw_usage``: huge, negative, NaN), and records every request.

Tests import it as ``helpers.openai_server`` (``tests/`` is on ``sys.path``); a benchmark puts ``tests/``
there first (see ``benchmarks/harness.py``)::

    with FakeOpenAI([text("hi", prompt_tokens=10)]) as server:
        endpoint = Endpoint("openai", server.url + "/v1")
        ...
        assert server.requests[0].body["model"] == "..."

Each request takes the next item of the queue: a ``Reply`` (text, reasoning, tool calls, usage) or a
``Fault`` (an HTTP error with an OpenAI-style body, a hang, a malformed body, a reply with no choices, a
stream cut off or carrying an error event, a connection closed with no reply, bytes that are not HTTP, a
body over any limit). With the queue empty it plays ``default`` if set, else ``responder(request)`` if
set, else it answers 500 "no scripted reply left" so a test that asks for more than it scripted fails
loudly. Waits (latency, hangs) are bounded and end at once when the server stops.

Connections are kept alive, as real endpoints keep them: ``opened`` counts those accepted, and
``drop_connections()`` closes them all from the server's side, as an endpoint does with idle ones.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from helpers.quiet_server import QuietServer

MAX_HANG_S = 5.0
"""No handler waits longer than this, whatever a fault asks for."""


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the fake model makes. ``arguments`` as a dict is sent as JSON; a string is sent
    verbatim, so a test can send arguments that are not valid JSON."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def wire_arguments(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted model reply."""

    content: str = ""
    reasoning: str | None = None
    reasoning_field: str | None = None
    """``reasoning_content`` (Tinker, vLLM, DeepSeek) or ``reasoning`` (OpenRouter); None: the server's."""
    tool_calls: tuple[ScriptedCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    """Sent as ``usage.prompt_tokens_details.cached_tokens`` when not None."""
    finish_reason: str | None = None
    chunk_chars: int = 3
    """Streaming: text, reasoning and tool-call arguments are split into pieces of this many characters."""
    chunked: bool = False
    """Not streamed: send the completion with ``Transfer-Encoding: chunked``, ``chunk_chars`` bytes a
    chunk, instead of with a Content-Length."""
    raw_usage: dict[str, Any] | None = None
    """Sent as ``usage`` exactly as given, in place of the counts above: an endpoint's hostile word
    (negative, huge, NaN, a string). ``float("nan")`` goes on the wire as ``NaN``, as some servers send it."""

    def usage(self) -> dict[str, Any]:
        if self.raw_usage is not None:
            return dict(self.raw_usage)
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage


FaultKind = Literal[
    "status", "hang", "malformed", "no_choices", "stream_error", "drop", "close", "garbled", "oversized"
]


@dataclass(frozen=True)
class Fault:
    """A failure injected into one request.

    - ``status``: an HTTP error (429, 500, 503, 401, 404 ...) with an OpenAI-style error body and, if
      given, a ``Retry-After`` header.
    - ``hang``: no reply for ``seconds`` (at most ``MAX_HANG_S``), then the connection is closed.
    - ``malformed``: a 200 whose body (or, streamed, whose first event) is not JSON.
    - ``no_choices``: a 200 with ``choices: []`` (streamed: only a usage chunk).
    - ``stream_error``: a streamed reply whose first event is ``{"error": {...}}`` (OpenRouter does this
      when the upstream provider fails after the stream began); not streamed, a 200 with that body.
    - ``drop``: the connection closes in the middle of the reply.
    - ``close``: the request is read and the connection closed with no byte of reply (what a client sees
      when it sends on a kept-alive connection the server has just closed).
    - ``garbled``: bytes that are not HTTP (``message``), then the connection closes.
    - ``oversized``: a 200 whose Content-Length says ``2**40`` bytes; a little is sent, then it closes.
    """

    kind: FaultKind
    status: int = 500
    message: str = "the fake server failed on purpose"
    retry_after: str | None = None
    seconds: float = 2.0


Item = Reply | Fault


def text(content: str, **kw: Any) -> Reply:
    return Reply(content=content, **kw)


def tool_call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None, **kw: Any) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, arguments, id),), **kw)


def status(code: int, message: str | None = None, *, retry_after: float | str | None = None) -> Fault:
    return Fault(
        "status",
        status=code,
        message=message or f"fake {code}: {HTTPStatus(code).phrase}",
        retry_after=None if retry_after is None else str(retry_after),
    )


def rate_limited(retry_after: float | str | None = 1, message: str = "Rate limit reached") -> Fault:
    return status(429, message, retry_after=retry_after)


def hang(seconds: float = 2.0) -> Fault:
    return Fault("hang", seconds=seconds)


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    raw: bytes
    body: Any
    """The JSON body, or None when it did not parse."""
    played: str = ""
    """What answered it: ``reply``, ``fault:status:429``, ``fault:hang`` ..."""
    server_s: float = 0.0
    """Time spent in the server on this request, from reading its headers to its last byte sent
    (includes the latency knob and any hang). Set just after that last byte: the client may see the
    reply a moment before, so read it once the server has stopped (or from a later request)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages", []))

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))


class FakeOpenAI:
    def __init__(
        self,
        replies: Iterable[Item] = (),
        *,
        latency_ms: float = 0.0,
        default: Item | None = None,
        responder: Callable[[Recorded], Item] | None = None,
        reasoning_field: str = "reasoning_content",
        model: str | None = None,
    ) -> None:
        self.latency_ms = latency_ms
        """Sleep this long before every reply, the benchmark's stand-in for the model's own time (at
        most ``MAX_HANG_S``)."""
        self.default = default
        self.responder = responder
        self.reasoning_field = reasoning_field
        self.model = model
        """The ``model`` the replies name; None echoes the request's."""
        self.models: list[dict[str, Any]] | None = None
        """What ``GET .../models`` lists (``{"object": "list", "data": models}``), as a gateway publishes
        its models and prices; None: 404, as an endpoint without the route answers."""
        self.requests: list[Recorded] = []
        self._queue: deque[Item] = deque(replies)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = 0
        self._connections: set[socket.socket] = set()
        self.opened = 0
        """Connections accepted so far: a client that pools them opens few."""
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None

    # --- control -------------------------------------------------------------------------------

    def push(self, *items: Item) -> None:
        """Add replies or faults to the end of the queue."""
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` with no path: add ``/v1`` (or any prefix) for a base URL."""
        if self._server is None:
            raise RuntimeError("the fake server is not running: use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop at once: waiting handlers wake up and leave, the listening socket closes."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            open_now, self._connections = list(self._connections), set()
        for connection in open_now:  # idle keep-alive connections: their handlers leave at once
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- serving -------------------------------------------------------------------------------

    def _next(self, request: Recorded) -> Item:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.default is not None:
            return self.default
        if self.responder is not None:
            return self.responder(request)
        return status(500, "the fake server has no scripted reply left for this request")

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _call_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"call_{self._ids}"

    def drop_connections(self) -> int:
        """Close every open connection from this side now (kept-alive ones a client has pooled, say);
        returns how many."""
        with self._lock:
            open_now = list(self._connections)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        return len(open_now)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (bounded); True when the server is stopping."""
        return self._stopping.wait(min(max(seconds, 0.0), MAX_HANG_S))


class _Server(QuietServer):
    request_queue_size = 128  # the default 5 drops connections opened together: a 1 s SYN retry each


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_fake = fake

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do; every reply has a length or is chunked
    disable_nagle_algorithm = True
    server_fake: FakeOpenAI
    _t0: float = 0.0

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.server_fake._lock:
            self.server_fake._connections.add(self.connection)
            self.server_fake.opened += 1

    def finish(self) -> None:
        with self.server_fake._lock:
            self.server_fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def parse_request(self) -> bool:
        self._t0 = time.perf_counter()  # the request line has arrived: the server's time starts here
        return super().parse_request()

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = Recorded(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw,
            body=body,
        )
        fake._record(recorded)
        try:
            if self.command == "GET" and recorded.path.endswith("/models") and fake.models is not None:
                recorded.played = "models"
                self._send(200, json.dumps({"object": "list", "data": fake.models}).encode())
                return
            if self.command != "POST" or not recorded.path.endswith("/chat/completions"):
                recorded.played = "not_found"
                self._error(404, f"no route for {self.command} {recorded.path}", "invalid_request_error")
                return
            if not isinstance(body, dict):
                recorded.played = "bad_request"
                self._error(400, "the request body is not a JSON object", "invalid_request_error")
                return
            item = fake._next(recorded)
            if fake.latency_ms and fake.wait(fake.latency_ms / 1000):
                self.close_connection = True
                return
            if isinstance(item, Fault):
                recorded.played = f"fault:{item.kind}" + (f":{item.status}" if item.kind == "status" else "")
                self._fault(item, body)
            else:
                recorded.played = "reply"
                if body.get("stream"):
                    self._stream(item, body)
                elif item.chunked:
                    self._send_chunked(json.dumps(self._completion(item, body)).encode(), item.chunk_chars)
                else:
                    self._send(200, json.dumps(self._completion(item, body)).encode())
        except (TimeoutError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (a timeout); nothing to answer
        finally:
            recorded.server_s = time.perf_counter() - self._t0

    # --- replies -------------------------------------------------------------------------------

    def _model(self, body: dict[str, Any]) -> str:
        return self.server_fake.model or str(body.get("model", "fake-model"))

    def _reasoning_field(self, reply: Reply) -> str:
        return reply.reasoning_field or self.server_fake.reasoning_field

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.reasoning is not None:
            message[self._reasoning_field(reply)] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or self.server_fake._call_id(),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.wire_arguments},
                }
                for call in reply.tool_calls
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(body),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": reply.usage(),
        }

    def _chunks(self, reply: Reply, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The reply as chat.completion.chunk objects: reasoning, then text, then tool calls in pieces."""
        model = self._model(body)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            }

        size = max(reply.chunk_chars, 1)
        yield chunk({"role": "assistant", "content": ""})
        field_name = self._reasoning_field(reply)
        for piece in _pieces(reply.reasoning or "", size):
            yield chunk({field_name: piece})
        for piece in _pieces(reply.content, size):
            yield chunk({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id or self.server_fake._call_id(),
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            for piece in _pieces(call.wire_arguments, size):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": reply.usage(),
            }

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        self._start_stream()
        for item in self._chunks(reply, body):
            self._event(json.dumps(item))
        self._event("[DONE]")
        self._end_stream()

    def _fault(self, fault: Fault, body: dict[str, Any]) -> None:
        streaming = bool(body.get("stream"))
        if fault.kind == "status":
            kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
            error_type = kind.get(
                fault.status, "server_error" if fault.status >= 500 else "invalid_request_error"
            )
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._error(fault.status, fault.message, error_type, extra)
        elif fault.kind == "hang":
            self.server_fake.wait(fault.seconds)
            self.close_connection = True  # no reply at all: the client must time out
        elif fault.kind == "malformed":
            if streaming:
                self._start_stream()
                self._event('{"id": "chatcmpl-fake", "choices": [{"delta": {"content": "Hel')
                self._event("[DONE]")
                self._end_stream()
            else:
                self._send(200, b'{"id": "chatcmpl-fake", "choices": [{"message": {"content": "Hel')
        elif fault.kind == "no_choices":
            if streaming:
                self._start_stream()
                usage = {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}
                self._event(json.dumps({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                                        "created": 0, "model": self._model(body), "choices": [],
                                        "usage": usage}))  # fmt: skip
                self._event("[DONE]")
                self._end_stream()
            else:
                reply = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                         "model": self._model(body), "choices": []}  # fmt: skip
                self._send(200, json.dumps(reply).encode())
        elif fault.kind == "stream_error":
            error = {"error": {"message": fault.message, "code": fault.status}}
            if streaming:
                self._start_stream()
                self._event(json.dumps(error))
                self._event("[DONE]")
                self._end_stream()
            else:
                self._send(200, json.dumps(error).encode())
        elif fault.kind in ("close", "garbled", "oversized"):
            if fault.kind == "garbled":
                self.wfile.write(fault.message.encode() + b"\r\n\r\n")
            elif fault.kind == "oversized":
                self._send(200, b'{"id": "chatcmpl-fake", ', length=2**40)
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault.kind == "drop":
            if streaming:
                self._start_stream()
                for item in list(self._chunks(Reply(content="Hello there, friend"), body))[:2]:
                    self._event(json.dumps(item))
            else:
                self._send(200, b'{"id": "chatcmpl-fake", "choi', length=4096)
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    # --- HTTP plumbing -------------------------------------------------------------------------

    def _head(self, code: int, headers: dict[str, str]) -> bytes:
        phrase = HTTPStatus(code).phrase
        lines = [f"HTTP/1.1 {code} {phrase}", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(
        self,
        code: int,
        payload: bytes,
        extra: dict[str, str] | None = None,
        *,
        length: int | None = None,
    ) -> None:
        """One write: status line, headers and body (so no Nagle or delayed-ACK stall)."""
        headers = {
            "Content-Type": "application/json",
            "Content-Length": str(len(payload) if length is None else length),
            **(extra or {}),
        }
        self.wfile.write(self._head(code, headers) + payload)
        self.wfile.flush()

    def _send_chunked(self, payload: bytes, size: int) -> None:
        """A 200 whose body goes in chunks of ``size`` bytes, all in one write."""
        head = self._head(200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        step = max(size, 1)
        pieces = (payload[i : i + step] for i in range(0, len(payload), step))
        body = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces)
        self.wfile.write(head + body + b"0\r\n\r\n")
        self.wfile.flush()

    def _error(self, code: int, message: str, error_type: str, extra: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
        self._send(code, json.dumps(body).encode(), extra)

    def _start_stream(self) -> None:
        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        self.wfile.write(self._head(200, headers))

    def _event(self, data: str) -> None:
        payload = f"data: {data}\n\n".encode()
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _pieces(value: str, size: int) -> Iterator[str]:
    for start in range(0, len(value), size):
        yield value[start : start + size]


__all__ = [
    "MAX_HANG_S",
    "FakeOpenAI",
    "Fault",
    "Recorded",
    "Reply",
    "ScriptedCall",
    "hang",
    "rate_limited",
    "status",
    "text",
    "tool_call",
]
