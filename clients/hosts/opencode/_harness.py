"""The opencode harness: each run a fresh session of one shared ``opencode serve``, its tools over MCP.

This module ties the others together: the server, the admission of runs, the watch and the mapping.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx

from machine.clients._routes import Route, route_model
from machine.clients.chat import Endpoint, model_timeout
from machine.errors import HarnessError
from machine.runs import HarnessRequest, HarnessResult

from .._programs import find_binary, judge_endpoint, served_tools
from .._proxy import Meter, ModelProxy, metered
from ._admission import _Admission, _needs
from ._mapping import MCP_NAME, _prompt
from ._result import to_result
from ._server import _check, _Server, _stop, start_server
from ._watch import _Watch

CONTROL_TIMEOUT_S = 30.0
"""Each request that sets up or tears down a run (the run's own message is bounded by its time limit)."""
CLEANUP_TIMEOUT_S = 5.0
MAX_RETRIES = 4
"""A failed model call is retried this many times (opencode's own backoff), as the chat harness does."""
INSTALL = "npm install -g opencode-ai"


async def _shielded(call: Callable[[], Awaitable[Any]], seconds: float = CLEANUP_TIMEOUT_S) -> None:
    """A clean-up call: it runs even when the run was cancelled, for a bounded time, and its failure
    never hides the run's own outcome."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(seconds), contextlib.suppress(httpx.HTTPError):
        await call()


class OpencodeHarness:
    """Runs each run's agent loop in opencode, with the run's tools, model and instructions only.

    One ``opencode serve`` per harness (one per command invocation), started on first use and stopped by
    ``aclose()``, sealed off from a person's own opencode setup. Each machine gets a custom agent whose
    prompt is its instructions (the model sees them plus the short environment block opencode always
    adds); opencode's own tools are off for it. ``max_steps`` is kept by watching the run's events and
    aborting the session after that many model calls (a step that began before the abort landed is
    charged, not kept).

    Each run gets a fresh session in its own sandbox folder, which opencode treats as a project instance
    of its own; the run's tools are added to that instance as the remote MCP server ``machine`` (served
    by ``serve_run_tools`` on 127.0.0.1 behind the run's bearer token), so the model calls them as
    ``machine_<tool>`` and they act in the run's sandbox. After the run the session is deleted and the
    instance disposed. Each step is passed on as events when it finishes; the trajectory is read back
    from the session's messages at the end. Earlier turns of a conversation are sent as a transcript
    before the new message."""

    name = "opencode"

    def __init__(
        self,
        *,
        binary: str | Path | None = None,
        base_url: str | None = None,
        config: Mapping[str, Any] | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        """``base_url``: send every model to this OpenAI-compatible endpoint. ``config``: extra opencode
        configuration merged into the server's (a custom provider, say). ``max_retries``: how many times
        opencode may retry a failed model call before the run fails (opencode itself never stops)."""
        self.binary = find_binary("opencode", "MACHINE_OPENCODE", INSTALL, binary)
        self.base_url = base_url
        self.config = dict(config or {})
        self.max_retries = max_retries
        self._server: _Server | None = None
        self._start_lock = anyio.Lock()
        self._admission = _Admission()
        self._folders: dict[str, anyio.Lock] = {}
        self._proxy: ModelProxy | None = None

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint the judges share with the runs (with ``base_url``), else None."""
        return judge_endpoint(self.base_url)

    async def aclose(self) -> None:
        """Stop the server (runs still going fail) and remove its private home, even when cancelled."""
        server, self._server = self._server, None
        proxy, self._proxy = self._proxy, None
        self._admission.forget()
        with anyio.CancelScope(shield=True):
            if server is not None:
                await anyio.to_thread.run_sync(_stop, server.process, server.home)
            if proxy is not None:
                await anyio.to_thread.run_sync(proxy.stop)

    async def _host_route(self, route: Route) -> Route:
        """Where opencode is pointed for ``route``: the harness's model proxy, for a provider we declare
        (so each call is reserved against its run's budget before it is sent)."""
        if route.own:
            return route
        async with self._start_lock:
            if self._proxy is None:
                proxy = ModelProxy()
                await anyio.to_thread.run_sync(proxy.start)
                self._proxy = proxy
            return self._proxy.route(route)

    async def _ensure_server(self) -> _Server:
        async with self._start_lock:
            if self._server is not None and self._server.process.poll() is None:
                return self._server
            if self._server is not None:  # it died: start afresh
                await self.aclose()
            self._server = await start_server(self.binary, self.config, self)
            return self._server

    @contextlib.asynccontextmanager
    async def _folder(self, request: HarnessRequest) -> AsyncIterator[Path]:
        """The run's folder: its sandbox, else an empty one. Runs sharing a folder share an opencode
        instance and its ``machine`` tool server, so they take turns."""
        sandbox = request.tool_context.sandbox
        if sandbox is None:
            with tempfile.TemporaryDirectory(prefix="machine-opencode-run-") as empty:
                yield Path(empty)
            return
        folder = Path(sandbox.path).resolve()
        lock = self._folders.setdefault(str(folder), anyio.Lock())
        try:
            async with lock:
                yield folder
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._folders.pop(str(folder), None)  # fresh sandboxes come and go: keep no lock for them

    async def run(self, request: HarnessRequest) -> HarnessResult:
        """One run in a fresh session; its steps are passed on and charged as they finish."""
        route = route_model(request.model, harness=self.name, base_url=self.base_url)
        server = await self._ensure_server()
        agent, needs = _needs(await self._host_route(route), request)
        meter = None if route.own else Meter(request.budget, request.model)
        limit = model_timeout() * (request.max_steps + 1)  # a model call a step, and one more for the tools
        async with self._folder(request) as folder, server.client(CONTROL_TIMEOUT_S) as http:
            where = {"directory": str(folder)}
            await self._admission.check_model(http, route)
            async with self._admission.admitted(http, needs), contextlib.AsyncExitStack() as stack:
                # Undone in reverse: the session aborted and deleted, the instance disposed (its MCP
                # client gone), then the run's tool server stopped and its token revoked.
                await _connect_tools(http, where, stack, request)
                session = await _open_session(http, where, stack, request)
                if meter is not None and self._proxy is not None:
                    meter.token = self._proxy.token
                    stack.enter_context(self._proxy.metering(session, meter))
                watch = _Watch(http, where, session, request, self.max_retries, metered=meter is not None)
                body = _message(agent, route, request)
                error = await _send(http, where, session, body, watch=watch, limit=limit, server=server)
                messages = await http.get(f"/session/{session}/message", params=where)
                _check(messages, "opencode could not list the session's messages")
        result = to_result(request, messages.json(), watch)
        if error is not None:
            result.error, result.stop_reason = error, "error"
        return metered(result, meter)


async def _connect_tools(
    http: httpx.AsyncClient, where: dict[str, str], stack: contextlib.AsyncExitStack, request: HarnessRequest
) -> None:
    """Serve the run's tools and add them to the run's instance as the MCP server ``machine``; the
    instance is disposed, then the tools' server stopped, when ``stack`` closes."""
    served = await stack.enter_async_context(served_tools(request))
    stack.push_async_callback(_shielded, lambda: http.post("/instance/dispose", params=where))
    if served is not None:
        mcp = {"type": "remote", "url": served.url, "headers": served.headers, "oauth": False}
        reply = await http.post("/mcp", params=where, json={"name": MCP_NAME, "config": mcp})
        _check(reply, "opencode could not reach the run's tool server")
        status = reply.json().get(MCP_NAME, {}).get("status")
        if status != "connected":
            raise HarnessError(f"opencode could not connect to the run's tools: {status}")


async def _open_session(
    http: httpx.AsyncClient, where: dict[str, str], stack: contextlib.AsyncExitStack, request: HarnessRequest
) -> str:
    """A fresh session for the run, aborted and then deleted when ``stack`` closes."""
    title = {"title": f"machine run {request.run_id}"}  # a given title spares a model call
    reply = await http.post("/session", params=where, json=title)
    _check(reply, "opencode could not open a session")
    session: str = reply.json()["id"]
    stack.push_async_callback(_shielded, lambda: http.delete(f"/session/{session}", params=where))
    stack.push_async_callback(_shielded, lambda: http.post(f"/session/{session}/abort", params=where))
    return session


def _message(agent: str, route: Route, request: HarnessRequest) -> dict[str, Any]:
    """The run's message to the session: its agent, model, effort and prompt."""
    body: dict[str, Any] = {
        "agent": agent,
        "model": {"providerID": route.provider, "modelID": route.model},
        "parts": [{"type": "text", "text": _prompt(request)}],
    }
    if request.effort is not None and not route.own:
        body["variant"] = request.effort.name
    return body


async def _send(
    http: httpx.AsyncClient,
    where: dict[str, str],
    session: str,
    body: dict[str, Any],
    *,
    watch: _Watch,
    limit: float,
    server: _Server,
) -> str | None:
    """Send the run's message while ``watch`` follows its steps, for at most ``limit`` seconds; the
    run's error, if any (opencode gone mid-run fails the run at once)."""
    failed: str | None = None
    reply: httpx.Response | None = None
    async with anyio.create_task_group() as tasks:
        await tasks.start(watch.watch)
        with anyio.move_on_after(limit) as timer:
            try:
                reply = await http.post(f"/session/{session}/message", params=where, json=body, timeout=None)
            except httpx.HTTPError as problem:  # opencode went away mid-run
                failed = f"opencode stopped answering: {type(problem).__name__}: {problem}"
        tasks.cancel_scope.cancel()
    if failed is not None:
        raise HarnessError(f"{failed} {server.log_tail(300)}".strip())
    if timer.cancelled_caught:
        return f"opencode did not finish the run within {limit:g} s (MACHINE_MODEL_TIMEOUT per step)"
    if watch.gave_up is None and not watch.reached and reply is not None:
        _check(reply, "opencode could not run the message")
    return watch.gave_up
