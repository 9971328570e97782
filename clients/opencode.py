"""The opencode harness: runs go through ``opencode serve``, the run's tools reach it over MCP.

One ``opencode serve`` per harness (one per command invocation), started on first use and stopped by
``aclose()``. It runs with a private, empty config home (``HOME`` and the XDG folders in a 0700 temporary
folder, removed at the end), a random server password, and opencode's switches for project config, Claude
Code instruction files and skills, external skills, default plugins, sharing, auto-update and the models
catalogue download turned off, so a person's own opencode setup never reaches a run.

Each machine gets a custom agent whose prompt is its instructions (the model sees them plus the short
environment block opencode always adds); opencode's own tools are off for it. opencode's step limit only
asks the model to stop, so ``max_steps`` is kept here: the run's events are watched and the session is
aborted after that many model calls (a step that began before the abort landed is charged, not kept).

Each run gets a fresh session in its own sandbox folder, which opencode treats as a project instance of
its own; the run's tools are added to that instance as the remote MCP server
``machine`` (served by ``serve_run_tools`` on 127.0.0.1 behind the run's bearer token), so the model calls
them as ``machine_<tool>`` and they act in the run's sandbox. After the run the session is deleted and the
instance disposed. Each step is passed on as events when it finishes; the trajectory is read back from
the session's messages at the end. Earlier turns of a conversation are sent as a transcript before the
new message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx

from machine._errors import HarnessError
from machine._harness import HarnessRequest, HarnessResult
from machine._runs import Message, ToolCall, Usage

from ._hosts import find_binary, host_environment, judge_endpoint
from ._routes import Route, route_model
from .chat import Endpoint, _timeout

MCP_NAME = "machine"
"""The name of the run's tool server in opencode: the model sees each tool as ``machine_<tool>``."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
INSTALL = "npm install -g opencode-ai"
SWITCHES = (
    "OPENCODE_DISABLE_PROJECT_CONFIG",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_AUTOCOMPACT",
)
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class _Server:
    process: subprocess.Popen[bytes]
    url: str
    password: str
    home: Path

    def client(self, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, auth=("opencode", self.password), timeout=timeout, trust_env=False
        )

    def log_tail(self, chars: int = 800) -> str:
        try:
            return (self.home / "serve.log").read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""


def _stop(process: subprocess.Popen[bytes], home: Path) -> None:
    """Stop the server's whole process group and remove its private home."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    shutil.rmtree(home, ignore_errors=True)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM if this process dies without stopping it."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class OpencodeHarness:
    name = "opencode"

    def __init__(
        self,
        *,
        binary: str | Path | None = None,
        base_url: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """``base_url``: send every model to this OpenAI-compatible endpoint. ``config``: extra opencode
        configuration merged into the server's (a custom provider, say)."""
        self.binary = binary
        self.base_url = base_url
        self.config = dict(config or {})
        self._server: _Server | None = None
        self._start_lock = anyio.Lock()
        self._config_lock = anyio.Lock()
        self._declared: set[str] = set()
        self._folders: dict[str, anyio.Lock] = {}

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint the judges share with the runs (with ``base_url``), else None."""
        return judge_endpoint(self.base_url)

    async def aclose(self) -> None:
        """Stop the server (runs still going fail) and remove its private home."""
        server, self._server = self._server, None
        self._declared.clear()
        if server is not None:
            await anyio.to_thread.run_sync(_stop, server.process, server.home)

    # --- the server ----------------------------------------------------------------------------

    async def _ensure_server(self) -> _Server:
        async with self._start_lock:
            if self._server is not None and self._server.process.poll() is None:
                return self._server
            if self._server is not None:  # it died: say so once, start afresh
                await self.aclose()
            self._server = await self._start()
            return self._server

    async def _start(self) -> _Server:
        binary = find_binary("opencode", "MACHINE_OPENCODE", INSTALL, self.binary)
        home = Path(tempfile.mkdtemp(prefix="machine-opencode-"))
        password = secrets.token_urlsafe(32)
        base = {
            "$schema": "https://opencode.ai/config.json",
            "share": "disabled",
            "autoupdate": False,
            "snapshot": False,
            **self.config,
        }
        extra = {
            "OPENCODE_CONFIG_CONTENT": json.dumps(base),
            "OPENCODE_SERVER_PASSWORD": password,
            **{switch: "1" for switch in SWITCHES},
        }
        env = host_environment(None, home, extra, own_keys=True)
        log = (home / "serve.log").open("wb")
        try:
            process = subprocess.Popen(
                [binary, "serve", "--pure", "--hostname", "127.0.0.1", "--port", "0"],
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if os.name == "posix" else None,
            )
        finally:
            log.close()
        weakref.finalize(self, _stop, process, home)  # a harness never closed still stops its server
        server = _Server(process, "", password, home)
        with anyio.move_on_after(START_TIMEOUT_S):
            while process.poll() is None:
                found = LISTENING.search(server.log_tail(4000))
                if found:
                    server.url = found.group(1)
                    return server
                await anyio.sleep(0.02)
        tail = server.log_tail()
        await anyio.to_thread.run_sync(_stop, process, home)
        raise HarnessError(f"opencode serve did not start: {tail or 'it printed nothing'}")

    async def _declare(self, http: httpx.AsyncClient, key: str, patch: dict[str, Any]) -> None:
        """Add ``patch`` to the server's configuration once (agents and providers are per machine)."""
        async with self._config_lock:
            if key in self._declared:
                return
            reply = await http.patch("/global/config", json=patch)
            _check(reply, "could not configure opencode")
            self._declared.add(key)

    async def _agent(self, http: httpx.AsyncClient, request: HarnessRequest) -> str:
        digest = hashlib.sha256(request.instructions.encode()).hexdigest()[:12]
        name = f"machine-{digest}"
        agent = {
            "description": f"the machine {request.machine}",
            "mode": "primary",
            "prompt": request.instructions or " ",  # an empty prompt would bring back opencode's own
            "tools": {"*": False, f"{MCP_NAME}_*": True},
        }
        await self._declare(http, name, {"agent": {name: agent}})
        return name

    async def _provider(self, http: httpx.AsyncClient, route: Route, request: HarnessRequest) -> None:
        if route.own:
            return
        model: dict[str, Any] = {"name": route.model, "tool_call": True}
        if request.effort is not None:
            model["options"] = {"reasoningEffort": request.effort.name}
        options: dict[str, Any] = {"baseURL": route.base_url}
        if route.key_env and os.environ.get(route.key_env):
            options["apiKey"] = f"{{env:{route.key_env}}}"  # opencode reads the key from its environment
        else:
            options["apiKey"] = "none"  # the SDK insists on one; a local endpoint ignores it
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": route.provider,
            "options": options,
            "models": {route.model: model},
        }
        key = json.dumps([route.provider, route.model, route.base_url, model], sort_keys=True)
        await self._declare(http, key, {"provider": {route.provider: provider}})

    # --- one run -------------------------------------------------------------------------------

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
        route = route_model(request.model, harness=self.name, base_url=self.base_url)
        server = await self._ensure_server()
        timeout = _timeout() * max(request.max_steps, 1) + 30.0
        async with self._folder(request) as folder, server.client(timeout) as http:
            where = {"directory": str(folder)}
            agent = await self._agent(http, request)
            await self._provider(http, route, request)
            async with contextlib.AsyncExitStack() as stack:
                if request.tools:
                    from machine.server.run_tools import serve_run_tools

                    served = await stack.enter_async_context(
                        serve_run_tools(request.tools, request.tool_context)
                    )
                    mcp = {"type": "remote", "url": served.url, "headers": served.headers, "oauth": False}
                    reply = await http.post("/mcp", params=where, json={"name": MCP_NAME, "config": mcp})
                    _check(reply, "opencode could not reach the run's tool server")
                    status = reply.json().get(MCP_NAME, {}).get("status")
                    if status != "connected":
                        raise HarnessError(f"opencode could not connect to the run's tools: {reply.json()}")
                    stack.push_async_callback(_quietly, http.post("/instance/dispose", params=where))
                title = {"title": f"machine run {request.run_id}"}  # a given title spares a model call
                reply = await http.post("/session", params=where, json=title)
                _check(reply, "opencode could not open a session")
                session = reply.json()["id"]
                stack.push_async_callback(_quietly, http.delete(f"/session/{session}", params=where))
                body = {
                    "agent": agent,
                    "model": {"providerID": route.provider, "modelID": route.model},
                    "parts": [{"type": "text", "text": _prompt(request)}],
                }
                error: str | None = None
                watch = _Watch(http, where, session, request)
                try:
                    async with anyio.create_task_group() as tasks:
                        await tasks.start(watch.watch)
                        reply = await http.post(f"/session/{session}/message", params=where, json=body)
                        tasks.cancel_scope.cancel()
                    if not watch.reached:
                        _check(reply, "opencode could not run the message")
                except httpx.TimeoutException:
                    error = f"opencode did not finish the run within {timeout:g} s"
                    await _quietly(http.post(f"/session/{session}/abort", params=where))
                messages = await http.get(f"/session/{session}/message", params=where)
                _check(messages, "opencode could not list the session's messages")
        result = to_result(request, messages.json(), max_steps_reached=watch.reached, emitted=watch.emitted)
        if error is not None:
            result.error, result.stop_reason = error, "error"
        return result


class _Watch:
    """Follows the session on opencode's event stream: passes on each step (a model call and the tools it
    called) as soon as it finishes, and aborts the session after ``max_steps`` of them (the tools of the
    last one have run by then, as in the in-process loop)."""

    def __init__(
        self, http: httpx.AsyncClient, where: dict[str, str], session: str, request: HarnessRequest
    ) -> None:
        self.http, self.where, self.session, self.request = http, where, session, request
        self.parts: dict[str, dict[str, dict[str, Any]]] = {}
        """The parts seen so far, by message and part id (a tool part is updated as it runs)."""
        self.emitted: set[str] = set()
        self.steps = 0
        self.reached = False

    async def watch(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self.http.stream("GET", "/event", params=self.where, timeout=None) as events:
            task_status.started()  # the stream is open: no step of this run can be missed
            async for line in events.aiter_lines():
                if not line.startswith("data:"):
                    continue
                part = json.loads(line[5:]).get("properties", {}).get("part") or {}
                if part.get("sessionID") != self.session or "messageID" not in part:
                    continue
                self.parts.setdefault(part["messageID"], {})[str(part.get("id"))] = part
                if part.get("type") != "step-finish":
                    continue
                self.steps += 1
                emit_step(self.request, *step_messages(list(self.parts.pop(part["messageID"]).values())))
                self.emitted.add(part["messageID"])
                if self.steps >= self.request.max_steps and part.get("reason") == "tool-calls":
                    self.reached = True
                    await self.http.post(f"/session/{self.session}/abort", params=self.where)
                    return


async def _quietly(call: Any) -> None:
    """Clean-up calls: a failure here must not hide the run's own outcome."""
    with contextlib.suppress(httpx.HTTPError):
        await call


def _check(reply: httpx.Response, what: str) -> None:
    if reply.status_code >= 400:
        raise HarnessError(f"{what}: HTTP {reply.status_code} {reply.text[:300]}")


def _prompt(request: HarnessRequest) -> str:
    if not request.history:
        return request.input
    said = [m for m in request.history if m.role in ("user", "assistant") and m.content]
    lines = [f"{m.role}: {m.content}" for m in said]
    return "The conversation so far:\n" + "\n".join(lines) + "\n\nThe new message:\n" + request.input


def _usage(tokens: Mapping[str, Any]) -> Usage:
    cache = tokens.get("cache") or {}
    read, write = int(cache.get("read") or 0), int(cache.get("write") or 0)
    return Usage(
        input_tokens=int(tokens.get("input") or 0) + read + write,
        cached_input_tokens=read,
        output_tokens=int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0),
    )


def _error_text(error: Mapping[str, Any]) -> str:
    data = error.get("data") or {}
    message = data.get("message") if isinstance(data, Mapping) else None
    return f"{error.get('name', 'error')}: {message or json.dumps(data)[:300]}"


def step_messages(parts: list[dict[str, Any]]) -> tuple[Message | None, list[Message]]:
    """One step's assistant message (text, reasoning, tool calls under our tools' names) and its tool
    results, from the step's parts; no message for a step that said and called nothing."""
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
    reasoning = "".join(p.get("text", "") for p in parts if p.get("type") == "reasoning") or None
    calls, results = [], []
    for part in parts:
        if part.get("type") != "tool":
            continue
        state = part.get("state") or {}
        name = str(part.get("tool", "")).removeprefix(f"{MCP_NAME}_")
        call_id = str(part.get("callID") or part.get("id"))
        raw = state.get("input")
        calls.append(ToolCall(id=call_id, name=name, arguments=raw if isinstance(raw, dict) else None))
        failed = state.get("status") != "completed"
        content = state.get("output") if not failed else state.get("error") or state.get("status")
        results.append(
            Message(role="tool", content=str(content or ""), tool_call_id=call_id, name=name, is_error=failed)
        )
    if not (text or reasoning or calls):
        return None, []
    return Message(role="assistant", content=text, reasoning=reasoning, tool_calls=calls), results


def emit_step(request: HarnessRequest, message: Message | None, results: list[Message]) -> None:
    """A step's events in the in-process loop's order: the reply, then each call and its result."""
    if message is None:
        return
    request.emit("assistant", message)
    for call, result in zip(message.tool_calls, results, strict=True):
        request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
        request.emit("tool_result", result)


def to_result(
    request: HarnessRequest,
    messages: list[dict[str, Any]],
    *,
    max_steps_reached: bool = False,
    emitted: set[str] | frozenset[str] = frozenset(),
) -> HarnessResult:
    """Our trajectory from a session's messages: the user's input, then each step's assistant message
    followed by its tool results. Steps not yet passed on as events (``emitted`` holds those that were)
    are passed on now."""
    trajectory = [Message(role="user", content=request.input)]
    usage, finish, error, steps = Usage(), None, None, 0
    for entry in messages:
        info, parts = entry.get("info", {}), entry.get("parts", [])
        if info.get("role") != "assistant":
            continue
        usage = usage + _usage(info.get("tokens") or {})
        finish = info.get("finish") or finish
        steps += 1
        if max_steps_reached and steps > request.max_steps:
            continue  # a step that began before the abort landed: paid for, not part of the run
        if info.get("error"):
            error = _error_text(info["error"])
        message, results = step_messages(parts)
        if info.get("id") not in emitted:
            emit_step(request, message, results)
        if message is not None:
            trajectory += [message, *results]
    cost = request.budget.charge(request.model, usage)
    output = next((m.content for m in reversed(trajectory) if m.role == "assistant"), "")
    if error is not None:
        stop = "error"
    else:
        stop = "max_steps" if max_steps_reached or finish == "tool-calls" else "end_turn"
    return HarnessResult(
        trajectory=trajectory, output=output, usage=usage, cost_usd=cost, stop_reason=stop, error=error
    )
