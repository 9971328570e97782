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
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx

from machine._effort import LEVELS
from machine._errors import HarnessError
from machine._harness import HarnessRequest, HarnessResult
from machine._runs import Message, ToolCall, Usage

from ._hosts import find_binary, host_environment, judge_endpoint, served_tools
from ._routes import Route, route_model
from .chat import Endpoint, _timeout

MCP_NAME = "machine"
"""The name of the run's tool server in opencode: the model sees each tool as ``machine_<tool>``."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
CONTROL_TIMEOUT_S = 30.0
"""Each request that sets up or tears down a run (the run's own message is bounded by its time limit)."""
CLEANUP_TIMEOUT_S = 5.0
MAX_RETRIES = 4
"""A failed model call is retried this many times (opencode's own backoff), as the chat harness does."""
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


def _pdeathsig() -> Any:
    """Linux: a function for the child (between fork and exec) that asks for SIGTERM when this process
    dies without stopping the server. Resolved here, in the parent: the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return functools.partial(prctl, 1, signal.SIGTERM)  # PR_SET_PDEATHSIG


async def _shielded(call: Callable[[], Awaitable[Any]], seconds: float = CLEANUP_TIMEOUT_S) -> None:
    """A clean-up call: it runs even when the run was cancelled, for a bounded time, and its failure
    never hides the run's own outcome."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(seconds), contextlib.suppress(httpx.HTTPError):
        await call()


class OpencodeHarness:
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
        self._gate = anyio.Condition()
        self._running = 0
        self._declaring = 0
        self._declared: set[str] = set()
        self._checked: set[str] = set()
        self._folders: dict[str, anyio.Lock] = {}

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint the judges share with the runs (with ``base_url``), else None."""
        return judge_endpoint(self.base_url)

    async def aclose(self) -> None:
        """Stop the server (runs still going fail) and remove its private home, even when cancelled."""
        server, self._server = self._server, None
        self._declared.clear()
        self._checked.clear()
        if server is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_stop, server.process, server.home)

    # --- the server ----------------------------------------------------------------------------

    async def _ensure_server(self) -> _Server:
        async with self._start_lock:
            if self._server is not None and self._server.process.poll() is None:
                return self._server
            if self._server is not None:  # it died: start afresh
                await self.aclose()
            self._server = await self._start()
            return self._server

    async def _start(self) -> _Server:
        home = Path(tempfile.mkdtemp(prefix="machine-opencode-"))
        process: subprocess.Popen[bytes] | None = None
        try:
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
            with (home / "serve.log").open("wb") as log:
                try:
                    process = subprocess.Popen(
                        [self.binary, "serve", "--pure", "--hostname", "127.0.0.1", "--port", "0"],
                        cwd=home,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=_pdeathsig(),
                    )
                except OSError as error:
                    raise HarnessError(f"could not start {self.binary}: {error}") from None
            weakref.finalize(self, _stop, process, home)  # a harness never closed still stops its server
            server = _Server(process, "", password, home)
            with anyio.move_on_after(START_TIMEOUT_S):
                while process.poll() is None:
                    found = LISTENING.search(server.log_tail(4000))
                    if found:
                        server.url = found.group(1)
                        return server
                    await anyio.sleep(0.02)
            raise HarnessError(f"opencode serve did not start: {server.log_tail() or 'it printed nothing'}")
        except BaseException:  # failed or cancelled: nothing of this start is left behind
            with anyio.CancelScope(shield=True):
                if process is not None:
                    await anyio.to_thread.run_sync(_stop, process, home)
                shutil.rmtree(home, ignore_errors=True)
            raise

    # --- configuration: agents and providers, declared while no run is in flight ---------------

    def _needs(self, route: Route, request: HarnessRequest) -> tuple[str, dict[str, dict[str, Any]]]:
        """The run's agent name, and the configuration it needs (by key: the patch that declares it)."""
        digest = hashlib.sha256(request.instructions.encode()).hexdigest()[:12]
        agent = f"machine-{digest}"
        needs = {
            f"agent {agent}": {
                "agent": {
                    agent: {
                        "description": f"the machine {request.machine}",
                        "mode": "primary",
                        "prompt": request.instructions or " ",  # empty would bring back opencode's own
                        "tools": {"*": False, f"{MCP_NAME}_*": True},
                    }
                }
            }
        }
        if not route.own:
            key = route.key_env if route.key_env and os.environ.get(route.key_env) else None
            provider = {
                "npm": "@ai-sdk/openai-compatible",
                "name": route.provider,
                # opencode reads the key from its environment; the SDK insists on one, a local endpoint
                # ignores it
                "options": {"baseURL": route.base_url, "apiKey": f"{{env:{key}}}" if key else "none"},
                "models": {
                    route.model: {
                        "name": route.model,
                        "tool_call": True,
                        "variants": {level: {"reasoningEffort": level} for level in LEVELS},
                    }
                },
            }
            needs[json.dumps(["provider", route.provider, route.model, route.base_url])] = {
                "provider": {route.provider: provider}
            }
        return agent, needs

    @contextlib.asynccontextmanager
    async def _admitted(
        self, http: httpx.AsyncClient, needs: dict[str, dict[str, Any]]
    ) -> AsyncIterator[None]:
        """Hold a place among the runs in flight, after declaring what this run needs.

        Changing opencode's configuration restarts its instances, which aborts every session running, so
        a declaration waits until no run is in flight, and runs arriving meanwhile wait for it."""
        async with self._gate:
            waiting = False
            try:
                while True:
                    missing = {k: v for k, v in needs.items() if k not in self._declared}
                    if not missing and self._declaring == int(waiting):
                        break
                    if missing and self._running == 0:
                        for key, patch in missing.items():
                            reply = await http.patch("/global/config", json=patch)
                            _check(reply, "could not configure opencode")
                            self._declared.add(key)
                        break
                    if missing and not waiting:
                        waiting = True
                        self._declaring += 1
                    await self._gate.wait()
            finally:
                if waiting:
                    self._declaring -= 1
                    self._gate.notify_all()
            self._running += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._gate:
                    self._running -= 1
                    self._gate.notify_all()

    async def _check_model(self, http: httpx.AsyncClient, route: Route) -> None:
        """A model of opencode's own providers must be one it knows, else the run fails with a clear
        message rather than opencode's "unknown error" (checked once per model)."""
        key = f"{route.provider}/{route.model}"
        if not route.own or key in self._checked:
            return
        reply = await http.get("/config/providers")
        _check(reply, "could not list opencode's providers")
        providers = {p.get("id"): p for p in reply.json().get("providers", [])}
        hint = "(is its key set?), or give a Tinker id, openrouter/<id>, or --base-url URL"
        if route.provider not in providers:
            known = ", ".join(sorted(str(p) for p in providers)) or "none"
            raise HarnessError(f"opencode has no provider {route.provider!r} {hint}; its providers: {known}")
        models = providers[route.provider].get("models") or {}
        if route.model not in models:
            some = ", ".join(sorted(models)[:12]) or "none"
            raise HarnessError(
                f"opencode's provider {route.provider!r} has no model {route.model!r}; it has: {some}"
            )
        self._checked.add(key)

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
        agent, needs = self._needs(route, request)
        limit = _timeout() * (request.max_steps + 1)  # a model call a step, and one more for the tools
        async with self._folder(request) as folder, server.client(CONTROL_TIMEOUT_S) as http:
            where = {"directory": str(folder)}
            await self._check_model(http, route)
            async with self._admitted(http, needs), contextlib.AsyncExitStack() as stack:
                # Undone in reverse: the session aborted and deleted, the instance disposed (its MCP
                # client gone), then the run's tool server stopped and its token revoked.
                served = await stack.enter_async_context(served_tools(request))
                stack.push_async_callback(_shielded, lambda: http.post("/instance/dispose", params=where))
                if served is not None:
                    mcp = {"type": "remote", "url": served.url, "headers": served.headers, "oauth": False}
                    reply = await http.post("/mcp", params=where, json={"name": MCP_NAME, "config": mcp})
                    _check(reply, "opencode could not reach the run's tool server")
                    status = reply.json().get(MCP_NAME, {}).get("status")
                    if status != "connected":
                        raise HarnessError(f"opencode could not connect to the run's tools: {status}")
                title = {"title": f"machine run {request.run_id}"}  # a given title spares a model call
                reply = await http.post("/session", params=where, json=title)
                _check(reply, "opencode could not open a session")
                session = reply.json()["id"]
                stack.push_async_callback(_shielded, lambda: http.delete(f"/session/{session}", params=where))
                stack.push_async_callback(
                    _shielded, lambda: http.post(f"/session/{session}/abort", params=where)
                )
                body: dict[str, Any] = {
                    "agent": agent,
                    "model": {"providerID": route.provider, "modelID": route.model},
                    "parts": [{"type": "text", "text": _prompt(request)}],
                }
                if request.effort is not None and not route.own:
                    body["variant"] = request.effort.name
                watch = _Watch(http, where, session, request, self.max_retries)
                failed: str | None = None
                async with anyio.create_task_group() as tasks:
                    await tasks.start(watch.watch)
                    with anyio.move_on_after(limit) as timer:
                        try:
                            reply = await http.post(
                                f"/session/{session}/message", params=where, json=body, timeout=None
                            )
                        except httpx.HTTPError as problem:  # opencode went away mid-run
                            failed = f"opencode stopped answering: {type(problem).__name__}: {problem}"
                    tasks.cancel_scope.cancel()
                if failed is not None:
                    raise HarnessError(f"{failed} {server.log_tail(300)}".strip())
                error = watch.gave_up
                if timer.cancelled_caught:
                    error = (
                        f"opencode did not finish the run within {limit:g} s (MACHINE_MODEL_TIMEOUT per step)"
                    )
                elif error is None and not watch.reached:
                    _check(reply, "opencode could not run the message")
                messages = await http.get(f"/session/{session}/message", params=where)
                _check(messages, "opencode could not list the session's messages")
        result = to_result(request, messages.json(), watch)
        if error is not None:
            result.error, result.stop_reason = error, "error"
        return result


class _Watch:
    """Follows the session on opencode's event stream while it runs.

    Each finished step (a model call and the tools it called) is passed on as events and charged to the
    budget at once, so a run that fails or is cancelled later has paid for what it used. After
    ``max_steps`` steps the session is aborted (the tools of the last one have run by then, as in the
    in-process loop); so is a model call that failed more than ``max_retries`` times (opencode would
    retry it for ever)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        where: dict[str, str],
        session: str,
        request: HarnessRequest,
        max_retries: int,
    ) -> None:
        self.http, self.where, self.session, self.request = http, where, session, request
        self.max_retries = max_retries
        self.parts: dict[str, dict[str, dict[str, Any]]] = {}
        """The parts seen so far, by message and part id (a tool part is updated as it runs)."""
        self.seen: set[str] = set()
        """The steps (assistant messages) passed on and charged."""
        self.usage, self.cost, self.steps = Usage(), 0.0, 0
        self.retries: list[dict[str, Any]] = []
        self.reached = False
        self.gave_up: str | None = None

    async def watch(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until the run ends, the limit is reached, or the stream breaks (then the session's messages,
        read at the end, still give every step)."""
        started = False
        try:
            async with self.http.stream("GET", "/event", params=self.where, timeout=None) as events:
                task_status.started()  # the stream is open: no step of this run can be missed
                started = True
                await self._follow(events)
        except httpx.HTTPError:
            if not started:  # the run goes on without live events
                task_status.started()

    async def _follow(self, events: httpx.Response) -> None:
        async for line in events.aiter_lines():
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:])
            except ValueError:
                continue
            found = event.get("properties") or {}
            mine = found.get("sessionID") == self.session
            if (
                event.get("type") == "session.status"
                and mine
                and await self._status(found.get("status") or {})
            ):
                return
            part = found.get("part") or {}
            if part.get("sessionID") != self.session or "messageID" not in part:
                continue
            self.parts.setdefault(part["messageID"], {})[str(part.get("id"))] = part
            if part.get("type") == "step-finish" and await self._step(part):
                return

    async def _step(self, finish: dict[str, Any]) -> bool:
        message_id = finish["messageID"]
        self.steps += 1
        self.seen.add(message_id)
        usage = _usage(finish.get("tokens") or {})
        self.usage, self.cost = (
            self.usage + usage,
            self.cost + self.request.budget.charge(self.request.model, usage),
        )
        emit_step(self.request, *step_messages(list(self.parts.pop(message_id).values())))
        if self.steps >= self.request.max_steps and finish.get("reason") == "tool-calls":
            self.reached = True
            await self.http.post(f"/session/{self.session}/abort", params=self.where)
            return True
        return False

    async def _status(self, status: dict[str, Any]) -> bool:
        if status.get("type") != "retry":
            return False
        attempt, message = int(status.get("attempt") or 0), str(status.get("message") or "")
        wait = max((float(status.get("next") or 0) / 1000) - time.time(), 0.0)
        self.retries.append({"attempt": attempt, "error": message, "wait_s": round(wait, 3)})
        if attempt <= self.max_retries:
            return False
        self.gave_up = f"the model call failed after {attempt} attempts: {message}"
        await self.http.post(f"/session/{self.session}/abort", params=self.where)
        return True


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
    request: HarnessRequest, messages: list[dict[str, Any]], watch: _Watch | None = None
) -> HarnessResult:
    """Our trajectory from a session's messages: the user's input, then each step's assistant message
    followed by its tool results. Steps the ``watch`` did not pass on and charge are passed on and
    charged now."""
    trajectory = [Message(role="user", content=request.input)]
    seen = watch.seen if watch is not None else set()
    reached = watch is not None and watch.reached
    usage, cost = (watch.usage, watch.cost) if watch is not None else (Usage(), 0.0)
    finish, error, steps = None, None, 0
    for entry in messages:
        info, parts = entry.get("info", {}), entry.get("parts", [])
        if info.get("role") != "assistant":
            continue
        message, results = step_messages(parts)
        if info.get("id") not in seen:
            used = _usage(info.get("tokens") or {})
            usage, cost = usage + used, cost + request.budget.charge(request.model, used)
            emit_step(request, message, results)
        finish = info.get("finish") or finish
        steps += 1
        if reached and steps > request.max_steps:
            continue  # a step that began before the abort landed: paid for, not part of the run
        if info.get("error"):
            error = _error_text(info["error"])
        if message is not None:
            trajectory += [message, *results]
    output = next((m.content for m in reversed(trajectory) if m.role == "assistant"), "")
    stopped = "max_steps" if reached or finish == "tool-calls" else "end_turn"
    return HarnessResult(
        trajectory=trajectory,
        output=output,
        usage=usage,
        cost_usd=cost,
        stop_reason="error" if error is not None else stopped,
        error=error,
        retries=watch.retries if watch is not None else [],
    )
