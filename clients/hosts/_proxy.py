"""A loopback model proxy, so a host that calls the provider itself (opencode, pi) is held to the budget.

The host is pointed at ``http://127.0.0.1:PORT/<token>/<upstream>``: a random port and a random token in
the path, a thread and event loop of its own (opencode's one server serves every run of a harness, whatever
task the run is in). Each ``POST .../chat/completions`` is forwarded to the route's real endpoint with the
real key (the host never holds it) after its ``max_tokens`` is clamped so the call is bounded; the bound is
reserved with ``Budget.reserve`` before the call is sent, and settled from the usage the reply reports
(JSON ``usage``, or the streamed chunk ``stream_options.include_usage`` asks for), checked as the chat
harness checks it. A spent budget is refused with HTTP 402 and the run's meter says so. Other GETs (the
models list) are forwarded as they are; other requests are refused. Requests and replies are bounded in
size and time.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import httpx
from anyio.streams.buffered import BufferedByteReceiveStream

from machine.budget import Budget, Reservation
from machine.errors import BudgetExceeded, UsageRefused
from machine.runs import HarnessRequest, HarnessResult, Usage

from .._endpoint import model_max_tokens, model_timeout
from .._routes import Route
from .._wire import prompt_bound, usage_of
from ._proxy_http import (
    Refusal,
    Request,
    error_reply,
    event,
    head,
    kept_headers,
    lines,
    read_capped,
    read_request,
)

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""A reply that is not streamed (a completion, the models list, an error)."""
READ_TIMEOUT_S = 60.0
"""The host's request must arrive within this; the upstream call is bounded by MACHINE_MODEL_TIMEOUT."""
DROPPED = frozenset(
    (
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "accept-encoding",
        "proxy-authorization",
        "proxy-connection",
        "authorization",
    )
)
"""Headers of the host's request that are not forwarded (hop-by-hop, the dummy key, the encoding)."""


@dataclass
class Meter:
    """One run's model calls through the proxy: what they cost, and why one was refused or failed."""

    budget: Budget
    model: str
    cost: float = 0.0
    calls: int = 0
    refused: BudgetExceeded | None = None
    """The budget's refusal of a call, if it refused one: the run stopped because the budget is spent."""
    failed: str | None = None
    """Why the last call whose usage could not be right failed."""
    token: str = ""
    """The proxy's token, kept out of what the run records."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, cost: float) -> None:
        with self._lock:
            self.cost += cost
            self.calls += 1


@dataclass(frozen=True)
class _Upstream:
    base_url: str
    key: str | None


class ModelProxy:
    """The proxy: ``start`` it, ``route`` a model's route through it, ``metering`` a run while it runs."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(24)
        self.port = 0
        self.sole: Meter | None = None
        """The meter of every call, for a proxy that serves one run (pi)."""
        self._upstreams: dict[str, _Upstream] = {}
        self._meters: dict[str, Meter] = {}
        self._lock = threading.Lock()
        self._portal_cm: Any = None
        self._served: Any = None
        self._client: httpx.AsyncClient | None = None

    def start(self) -> None:
        """Listen on 127.0.0.1 in a thread of its own (blocking for a few milliseconds)."""
        manager = anyio.from_thread.start_blocking_portal()
        portal = manager.__enter__()
        try:
            create = functools.partial(anyio.create_tcp_listener, local_host="127.0.0.1", local_port=0)
            listener = portal.call(create)
            self.port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
            timeout = httpx.Timeout(model_timeout(), connect=min(model_timeout(), 30.0))
            self._client = httpx.AsyncClient(timeout=timeout)
            self._served = portal.start_task_soon(self._serve, listener)
        except BaseException:
            manager.__exit__(None, None, None)
            raise
        self._portal_cm = manager

    def stop(self) -> None:
        """Stop listening and end the calls in flight (blocking until they have ended)."""
        manager, self._portal_cm = self._portal_cm, None
        if manager is None:
            return
        self._served.cancel()  # the listener closes, then the upstream client
        with contextlib.suppress(Exception):
            manager.__exit__(None, None, None)
        self._client = None

    async def _serve(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        try:
            async with listener:
                await listener.serve(self._connection)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                if self._client is not None:
                    await self._client.aclose()

    def route(self, route: Route) -> Route:
        """``route`` through the proxy: the host sees the proxy's URL (the proxy adds the real key)."""
        if route.base_url is None:
            return route
        key = secrets.token_hex(4)
        real = os.environ.get(route.key_env) if route.key_env else None
        with self._lock:
            for slot, upstream in self._upstreams.items():
                if upstream == _Upstream(route.base_url, real):
                    key = slot
                    break
            self._upstreams[key] = _Upstream(route.base_url, real)
        return replace(route, base_url=f"http://127.0.0.1:{self.port}/{self.token}/{key}")

    @contextlib.contextmanager
    def metering(self, session: str, meter: Meter) -> Iterator[Meter]:
        """Charge the calls a host makes for ``session`` (its ``x-session-id``) to ``meter`` meanwhile."""
        with self._lock:
            self._meters[session] = meter
        try:
            yield meter
        finally:
            with self._lock:
                self._meters.pop(session, None)

    def _meter(self, headers: dict[str, str]) -> Meter | None:
        with self._lock:
            found = self._meters.get(headers.get("x-session-id", ""))
        return found or self.sole

    async def _connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                try:
                    with anyio.fail_after(READ_TIMEOUT_S):
                        request = await read_request(BufferedByteReceiveStream(stream))
                    await self._answer(stream, request)
                except Refusal as refusal:
                    await stream.send(error_reply(refusal.status, refusal.message, refusal.kind))
                except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound):
                    return
                except Exception as error:  # one call's failure never takes the listener down with it
                    reason = f"the model proxy could not pass the call on: {type(error).__name__}: {error}"
                    await stream.send(error_reply(502, reason[:500], "server_error"))

    async def _answer(self, stream: anyio.abc.SocketStream, request: Request) -> None:
        _, token, slot, rest = [*request.path.split("?", 1)[0].split("/", 3), "", "", ""][:4]
        with self._lock:
            upstream = self._upstreams.get(slot)
        if not secrets.compare_digest(token.encode(), self.token.encode()) or upstream is None:
            raise Refusal(404, "not found")
        url = f"{upstream.base_url}/{rest}"
        headers = {k: v for k, v in request.headers.items() if k not in DROPPED}
        headers["accept-encoding"] = "identity"
        if upstream.key:
            headers["authorization"] = f"Bearer {upstream.key}"
        elif "authorization" in request.headers:
            headers["authorization"] = request.headers["authorization"]
        if request.method == "GET":
            await self._forward_get(stream, url, headers)
            return
        if request.method != "POST" or not rest.rstrip("/").endswith("chat/completions"):
            raise Refusal(404, f"only chat completions are forwarded, not {request.method} /{rest}")
        meter = self._meter(request.headers)
        if meter is None:
            raise Refusal(403, "this model call belongs to no run in flight", "permission_error")
        await _Call(self._http(), meter, url, headers).run(stream, request.body)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise Refusal(503, "the proxy is stopping", "server_error")
        return self._client

    async def _forward_get(self, stream: anyio.abc.SocketStream, url: str, headers: dict[str, str]) -> None:
        try:
            with anyio.fail_after(model_timeout()):
                async with self._http().stream("GET", url, headers=headers) as reply:
                    raw = await read_capped(reply, MAX_REPLY_BYTES)
        except (httpx.HTTPError, TimeoutError, UsageRefused) as problem:
            raise Refusal(502, f"the endpoint's reply could not be had: {problem}", "server_error") from None
        await stream.send(head(reply.status_code, kept_headers(reply), len(raw)) + raw)


class _Call:
    """One chat completion through the proxy, reserved before it is sent and settled from its reply."""

    def __init__(self, http: httpx.AsyncClient, meter: Meter, url: str, headers: dict[str, str]) -> None:
        self.http, self.meter, self.url, self.headers = http, meter, url, headers
        self.started = False

    async def run(self, stream: anyio.abc.SocketStream, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            raise Refusal(400, "the request body is not a JSON object")
        bound = _bounded(body)
        try:
            async with self.meter.budget.reserve(self.meter.model, bound) as hold:
                try:
                    with anyio.fail_after(model_timeout()):
                        await self._send(stream, body, hold)
                except (httpx.HTTPError, TimeoutError) as problem:
                    if self.started:
                        return  # the host sees its stream cut off
                    reason = f"the endpoint could not be reached: {type(problem).__name__}: {problem}"
                    raise Refusal(502, reason, "server_error") from None
        except BudgetExceeded as refused:
            self.meter.refused = refused
            raise Refusal(402, str(refused), "budget_exceeded") from None
        except UsageRefused as refused:
            self.meter.failed = str(refused)
            self.meter.add(refused.charged)
            if not self.started:
                raise Refusal(422, str(refused), "usage_refused") from None
            await stream.send(event({"error": {"message": str(refused), "type": "usage_refused"}}))

    async def _send(self, stream: anyio.abc.SocketStream, body: dict[str, Any], hold: Reservation) -> None:
        content = json.dumps(body).encode()
        async with self.http.stream("POST", self.url, content=content, headers=self.headers) as reply:
            if reply.status_code != 200 or not body.get("stream"):
                raw = await read_capped(reply, MAX_REPLY_BYTES)
                if reply.status_code == 200:
                    self.meter.add(hold.settle(_reply_usage(raw)))
                    self.meter.failed = None
                await stream.send(head(reply.status_code, kept_headers(reply), len(raw)) + raw)
                return
            await stream.send(head(200, {"content-type": "text/event-stream", "cache-control": "no-cache"}))
            self.started = True
            usage = Usage()
            async for line in lines(reply):
                found = _chunk_usage(line)
                if found is not None:
                    hold.vet(found)  # usage that cannot be right fails the call before it goes on
                    usage = found
                await stream.send(line)
            self.meter.add(hold.settle(usage))
            self.meter.failed = None


def _bounded(body: dict[str, Any]) -> Usage:
    """Clamp the request's output to ``MACHINE_MAX_TOKENS`` (in the field the host used), ask a stream
    for its usage, and say the most the call can use."""
    most = model_max_tokens()
    fields = [name for name in ("max_tokens", "max_completion_tokens") if name in body] or ["max_tokens"]
    for name in fields:
        asked = body.get(name)
        valid = isinstance(asked, int) and not isinstance(asked, bool) and asked > 0
        body[name] = min(int(asked or 0), most) if valid else most
    if body.get("stream"):
        options = body.get("stream_options")
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    output = max(int(body[name]) for name in fields)
    return Usage(input_tokens=prompt_bound(body), output_tokens=output)


def _as_usage(raw: Any) -> Usage:
    """A JSON ``usage`` object as ours, checked as the chat harness checks a reply's (UsageRefused)."""
    if not isinstance(raw, dict):
        raise UsageRefused(f"the endpoint reported usage {json.dumps(raw)[:200]}, which is not an object")
    return usage_of(raw)


def _reply_usage(raw: bytes) -> Usage:
    """A completion's usage; none when the reply does not parse (the host then fails the call)."""
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):  # too deep to parse is no reply either
        return Usage()
    usage = reply.get("usage") if isinstance(reply, dict) else None
    return Usage() if usage is None else _as_usage(usage)


def _chunk_usage(line: bytes) -> Usage | None:
    """The usage a streamed chunk carries, if it carries one."""
    if not line.startswith(b"data:") or b'"usage"' not in line:
        return None
    try:
        chunk = json.loads(line[5:])
    except (ValueError, RecursionError):
        return None
    usage = chunk.get("usage") if isinstance(chunk, dict) else None
    return None if usage is None else _as_usage(usage)


@contextlib.asynccontextmanager
async def proxied(route: Route, request: HarnessRequest) -> AsyncIterator[tuple[Route, Meter | None]]:
    """For a host that serves one run (pi): the route it is pointed at, through a proxy of its own, and
    the run's meter; a model of the host's own providers goes as it is (charged after the fact)."""
    if route.own:
        yield route, None
        return
    proxy = ModelProxy()
    await anyio.to_thread.run_sync(proxy.start)
    proxy.sole = Meter(request.budget, request.model, token=proxy.token)
    try:
        yield proxy.route(route), proxy.sole
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(proxy.stop)


def metered(result: HarnessResult, meter: Meter | None) -> HarnessResult:
    """The run's result with what its calls through the proxy cost; a call the budget refused stops the
    run (``stop_reason`` ``budget``), or, refused before any step, raises BudgetExceeded as the shared
    loop does; a call whose usage could not be right says so."""
    if meter is None:
        return result
    result.cost_usd = meter.cost
    if meter.refused is not None:
        if not any(m.role == "assistant" for m in result.trajectory):
            raise meter.refused
        result.stop_reason, result.error = "budget", str(meter.refused)
    elif meter.failed is not None and result.error is not None:
        result.stop_reason, result.error = "error", meter.failed
    if result.error and meter.token:
        result.error = result.error.replace(meter.token, "<token>")
    return result
