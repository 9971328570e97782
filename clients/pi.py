"""The pi harness: one run through the Pi coding agent (``pi --mode json -p``), its tools served from here.

Pi runs the agent loop; this process serves the run's tools over MCP (``serve_run_tools``), so every call
acts in the run's sandbox exactly as in the in-process loop. Pi has no MCP client, so each run gets a
generated extension (``EXTENSION``) that registers the run's tools with ``pi.registerTool`` and forwards
each call to that server with a small streamable-HTTP client written with ``fetch``.

Each run is sealed off from the person's own pi: a private 0700 directory is its agent directory, its HOME
and its working folder (no ~/.pi or project .pi settings, keys, extensions, skills, themes or context files
load), pi runs offline, built-in
tools, discovery and compaction are off, and the extension makes the system prompt exactly the machine's
instructions (pi would append the date and the working directory). The tool server's URL and bearer token
reach pi only through its environment; nothing written to disk holds the token.

History is given to pi faithfully: earlier turns become a pi session file (``--session``) of user,
assistant (text, tool calls) and tool-result messages, which pi replays to the model as its own turns.
The input goes in on stdin (pi trims it), so text that starts with ``-`` or ``@`` is not read as a flag or a
file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from machine._harness import HarnessRequest, HarnessResult
from machine._runs import Message, ToolCall, Usage

from ._hosts import find_binary, host_environment, judge_endpoint, served_tools
from ._routes import Route, route_model
from .chat import Endpoint, _timeout

PI_PACKAGE = "@mariozechner/pi-coding-agent@0.73.1"
INSTALL = f"npm install -g {PI_PACKAGE}"
URL_ENV = "MACHINE_PI_TOOLS_URL"
TOKEN_ENV = "MACHINE_PI_TOOLS_TOKEN"
DUMMY_KEY = "not-needed"
THINKING = {"none": "off"}
"""Our effort names that pi's ``--thinking`` spells otherwise (minimal ... xhigh are the same)."""
STDERR_KEEP = 8000
"""The tail of pi's stderr kept for an error message."""
LINE_LIMIT = 1 << 26
"""Pi writes one JSON event a line, and a streamed reply's events repeat the whole reply so far."""

EXTENSION = r"""// Written by machine for one run of the pi harness; deleted when the run ends.
// Registers the run's tools, served by machine over MCP (streamable HTTP), as pi tools.
import { getModel } from "@mariozechner/pi-ai";

const CONFIG = __MACHINE_CONFIG__;
const TOOLS_URL = process.env.__URL_ENV__ ?? "";
const TOKEN = process.env.__TOKEN_ENV__ ?? "";
delete process.env.__TOKEN_ENV__; // nothing pi starts inherits it
const OFFERED = "2025-11-25";

let session = undefined;
let protocol = OFFERED;
let lastId = 0;
let opening = undefined;

function headers(extra) {
  const all = { authorization: `Bearer ${TOKEN}`, "mcp-protocol-version": protocol, ...extra };
  if (session) all["mcp-session-id"] = session;
  return all;
}

async function post(message, signal) {
  const response = await fetch(TOOLS_URL, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "application/json, text/event-stream" }),
    body: JSON.stringify(message),
    signal,
  });
  const given = response.headers.get("mcp-session-id");
  if (given) session = given;
  if (!response.ok) {
    const body = (await response.text().catch(() => "")).slice(0, 500);
    const why = body ? `: ${body}` : "";
    throw new Error(`the run's tool server answered ${response.status} to ${message.method}${why}`);
  }
  return response;
}

function parseEvent(data, id) {
  if (!data.length) return undefined;
  const message = JSON.parse(data.join("\n"));
  return message && message.id === id ? message : undefined;
}

// The answer to request `id`: a JSON body, or the matching `data:` event of an SSE stream.
async function answer(response, id) {
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("text/event-stream")) return await response.json();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        } else if (line === "") {
          const found = parseEvent(data, id);
          data = [];
          if (found) return found;
        }
      }
    }
    const found = parseEvent(data, id);
    if (found) return found;
  } finally {
    reader.cancel().catch(() => {});
  }
  throw new Error(`the run's tool server closed its stream without answering request ${id}`);
}

async function request(method, params, signal) {
  const id = ++lastId;
  const message = await answer(await post({ jsonrpc: "2.0", id, method, params }, signal), id);
  const error = message.error;
  if (error) throw new Error(`${method} failed: ${error.message ?? JSON.stringify(error)}`);
  return message.result;
}

function connect() {
  if (!opening) {
    const started = (async () => {
      const result = await request("initialize", {
        protocolVersion: OFFERED,
        capabilities: {},
        clientInfo: { name: "machine-pi", version: "1" },
      });
      protocol = result?.protocolVersion ?? OFFERED;
      const response = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
      await response.body?.cancel();
    })();
    opening = started;
    started.catch(() => {
      if (opening === started) opening = undefined; // the next call tries again
    });
  }
  return opening;
}

// Ends the MCP session: an open client keeps `pi -p` from exiting.
async function close() {
  const ending = session;
  session = undefined;
  opening = undefined;
  if (!ending) return;
  try {
    const response = await fetch(TOOLS_URL, {
      method: "DELETE",
      headers: { ...headers({}), "mcp-session-id": ending },
      signal: AbortSignal.timeout(3000),
    });
    await response.body?.cancel();
  } catch {}
}

function text(result) {
  const parts = result?.content ?? [];
  return parts.map((part) => (part.type === "text" ? part.text : JSON.stringify(part))).join("\n");
}

// The request as machine's chat harness sends it: no system message without instructions, and no output
// cap on a route machine chose (Tinker, OpenRouter, --base-url): pi always sends one, which some refuse.
function payload(given) {
  if (!given || typeof given !== "object") return undefined;
  const changed = { ...given };
  const messages = changed.messages;
  const first = Array.isArray(messages) ? messages[0]?.role : undefined;
  const system = first === "system" || first === "developer";
  if (system && !CONFIG.instructions) changed.messages = messages.slice(1);
  if (CONFIG.uncapped) {
    delete changed.max_completion_tokens;
    delete changed.max_tokens;
  }
  return changed;
}

export default function (pi) {
  const declare = CONFIG.declare;
  if (declare && !getModel(declare.provider, declare.model.id)) {
    pi.registerProvider(declare.provider, { ...declare.config, models: [declare.model] });
  }
  for (const tool of CONFIG.tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      executionMode: "sequential",
      async execute(_toolCallId, params, signal) {
        await connect();
        const result = await request("tools/call", { name: tool.name, arguments: params ?? {} }, signal);
        if (result?.isError) throw new Error(text(result)); // pi gives the model an error result
        return { content: [{ type: "text", text: text(result) }], details: {} };
      },
    });
  }
  // Exactly the machine's instructions: pi would append the date and the working directory.
  const instructions = CONFIG.instructions;
  pi.on("before_agent_start", async () => (instructions ? { systemPrompt: instructions } : undefined));
  if (!instructions || CONFIG.uncapped) pi.on("before_provider_request", (event) => payload(event.payload));
  // After max_steps model turns machine stops pi; no further request may leave before it does.
  pi.on("context", async (event, ctx) => {
    const done = event.messages.filter(
      (m) => m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted",
    ).length;
    if (done - CONFIG.historyTurns < CONFIG.maxSteps) return undefined;
    await new Promise((resolve) => ctx.signal?.addEventListener("abort", resolve, { once: true }));
    return undefined;
  });
  pi.on("session_shutdown", close);
}
"""


def render_extension(config: Mapping[str, Any]) -> str:
    """The extension's source with the run's configuration (no secret: URL and token come from the env)."""
    return (
        EXTENSION.replace("__MACHINE_CONFIG__", json.dumps(config, ensure_ascii=False))
        .replace("__URL_ENV__", URL_ENV)
        .replace("__TOKEN_ENV__", TOKEN_ENV)
    )


def _declared_model(route: Route, request: HarnessRequest) -> dict[str, Any]:
    """A model pi does not know, described as the chat harness calls it: ``reasoning_effort`` only when
    the run asks for an effort (``none`` sent as ``none``); the extension drops pi's output cap."""
    model: dict[str, Any] = {
        "id": route.model,
        "name": route.model,
        "reasoning": request.effort is not None,
        "input": ["text"],
        # models.json's defaults, spelled out: pi.registerProvider (OpenRouter) fills in none of them.
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 16384,
    }
    if request.effort is not None:
        model["thinkingLevelMap"] = {"off": "none", "xhigh": "xhigh"}
    return model


def _api_key(route: Route) -> str:
    """The key by the name of its variable (pi reads it from its environment), or a dummy when unset."""
    return route.key_env if route.key_env and os.environ.get(route.key_env) else DUMMY_KEY


def model_config(route: Route, request: HarnessRequest) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``models.json`` for the run's agent directory, and the model the extension declares when pi's
    catalogue lacks it (OpenRouter: pi's own provider keeps its catalogue, headers and thinking format)."""
    if route.own:
        return {"providers": {}}, None
    if route.provider == "openrouter":
        provider = {"baseUrl": route.base_url, "apiKey": _api_key(route), "api": "openai-completions"}
        declare = {"provider": "openrouter", "config": provider, "model": _declared_model(route, request)}
        return {"providers": {"openrouter": {"baseUrl": route.base_url}}}, declare
    declared = {
        "baseUrl": route.base_url,
        "api": "openai-completions",
        "apiKey": _api_key(route),
        # As the chat harness sends it: the instructions as a system message, no ``store`` field.
        "compat": {"supportsDeveloperRole": False, "supportsStore": False, "supportsStrictMode": False},
        "models": [_declared_model(route, request)],
    }
    return {"providers": {route.provider: declared}}, None


def settings(*, max_retries: int, retry_delay_s: float, timeout_s: float) -> dict[str, Any]:
    """Pi's settings for one run: no compaction (the trajectory is what the model saw), retries like the
    chat harness's and visible as events (the SDK's own, which are not, are off), each call bounded."""
    return {
        "compaction": {"enabled": False},
        "retry": {
            "enabled": max_retries > 0,
            "maxRetries": max_retries,
            "baseDelayMs": max(int(retry_delay_s * 1000), 1),
            "provider": {"timeoutMs": int(timeout_s * 1000), "maxRetries": 0},
        },
    }


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_file(history: list[Message], route: Route, cwd: Path) -> str:
    """Earlier turns as a pi session (JSONL), assistant turns marked as the run's model so pi replays
    them as its own. Reasoning goes back only to Tinker, as the chat harness does."""
    now = time.time()
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": _stamp(now), "cwd": str(cwd)}
    ]
    parent: str | None = None
    api = "openai-completions"
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    usage = {**tokens, "totalTokens": 0, "cost": {**tokens, "total": 0}}
    for index, m in enumerate(history):
        at = int(now * 1000) - len(history) + index
        message: dict[str, Any]
        if m.role == "assistant":
            content: list[dict[str, Any]] = []
            if m.reasoning and route.provider == "tinker":
                content.append(
                    {"type": "thinking", "thinking": m.reasoning, "thinkingSignature": "reasoning_content"}
                )
            if m.content:
                content.append({"type": "text", "text": m.content})
            content.extend(
                {"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.arguments or {}}
                for c in m.tool_calls
            )
            message = {
                "role": "assistant",
                "content": content,
                "api": api,
                "provider": route.provider,
                "model": route.model,
                "usage": usage,
                "stopReason": "toolUse" if m.tool_calls else "stop",
                "timestamp": at,
            }
        elif m.role == "tool":
            message = {
                "role": "toolResult",
                "toolCallId": m.tool_call_id or "",
                "toolName": m.name or "",
                "content": [{"type": "text", "text": m.content}],
                "isError": m.is_error,
                "timestamp": at,
            }
        else:
            message = {"role": "user", "content": [{"type": "text", "text": m.content}], "timestamp": at}
        entry = uuid.uuid4().hex[:8]
        lines.append(
            {
                "type": "message",
                "id": entry,
                "parentId": parent,
                "timestamp": _stamp(at / 1000),
                "message": message,
            }
        )
        parent = entry
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _usage(raw: Any) -> Usage:
    """Pi's usage in ours: its ``input`` excludes the cache, ours includes it."""
    if not isinstance(raw, dict):
        return Usage()
    cache_read, cache_write = int(raw.get("cacheRead") or 0), int(raw.get("cacheWrite") or 0)
    return Usage(
        input_tokens=int(raw.get("input") or 0) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        output_tokens=int(raw.get("output") or 0),
    )


def _blocks(content: Any, kind: str, key: str) -> list[str]:
    if isinstance(content, str):
        return [content] if kind == "text" else []
    return [str(b.get(key) or "") for b in content or [] if isinstance(b, dict) and b.get("type") == kind]


def assistant_message(raw: Mapping[str, Any]) -> Message:
    content = raw.get("content")
    calls = [
        ToolCall(
            id=str(b.get("id") or f"call_{i}"),
            name=str(b.get("name") or ""),
            arguments=b["arguments"] if isinstance(b.get("arguments"), dict) else None,
        )
        for i, b in enumerate(content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "toolCall"
    ]
    reasoning = "\n".join(t for t in _blocks(content, "thinking", "thinking") if t)
    return Message(
        role="assistant",
        content="".join(_blocks(content, "text", "text")),
        reasoning=reasoning or None,
        tool_calls=calls,
    )


def tool_message(raw: Mapping[str, Any]) -> Message:
    return Message(
        role="tool",
        content="\n".join(_blocks(raw.get("content"), "text", "text")),
        tool_call_id=str(raw.get("toolCallId") or ""),
        name=str(raw.get("toolName") or ""),
        is_error=bool(raw.get("isError")),
    )


@dataclass
class _Progress:
    """What pi's events have shown so far."""

    request: HarnessRequest
    trajectory: list[Message]
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    steps: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    """The last failed model call's reason; cleared by a turn that succeeds."""
    ended: bool = False
    max_steps: bool = False
    calls_shown: set[str] = field(default_factory=set)

    @property
    def finished(self) -> bool:
        """Pi ended the run with the model's last reply (no retry of a failed call can follow)."""
        return self.ended and self.error is None and self.steps > 0

    def event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_end":
            self._message(event.get("message") or {})
        elif kind == "tool_execution_start":
            self._call_starts(str(event.get("toolCallId") or ""))
        elif kind == "auto_retry_start":
            wait = float(event.get("delayMs") or 0) / 1000
            self.retries.append(
                {
                    "attempt": event.get("attempt"),
                    "error": event.get("errorMessage"),
                    "wait_s": round(wait, 3),
                }
            )
        elif kind == "turn_end":
            content = (event.get("message") or {}).get("content")
            calls = any(isinstance(b, dict) and b.get("type") == "toolCall" for b in content or [])
            if self.steps >= self.request.max_steps and calls:  # the model wants another turn
                self.max_steps = True
        elif kind == "agent_end":
            self.ended = True

    def _message(self, raw: Mapping[str, Any]) -> None:
        role = raw.get("role")
        if role == "assistant":
            if raw.get("stopReason") in ("error", "aborted"):
                self.error = str(
                    raw.get("errorMessage") or f"the model call ended with {raw.get('stopReason')}"
                )
                return
            self.error = None
            message, usage = assistant_message(raw), _usage(raw.get("usage"))
            self.steps += 1
            self.usage = self.usage + usage
            self.cost += self.request.budget.charge(self.request.model, usage)
            self.trajectory.append(message)
            self.request.emit("assistant", message)
        elif role == "toolResult":
            result = tool_message(raw)
            self._call_starts(result.tool_call_id or "")
            self.trajectory.append(result)
            self.request.emit("tool_result", result)

    def _call_starts(self, call_id: str) -> None:
        """Emit a tool call as it starts (a call pi refused before running it: with its result)."""
        if call_id in self.calls_shown:
            return
        for message in reversed(self.trajectory):
            call = next((c for c in message.tool_calls if c.id == call_id), None)
            if call is not None:
                self.calls_shown.add(call_id)
                self.request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
                return

    def text_delta(self, line: str) -> None:
        """Stream a reply's text (``message_update`` lines are only read when someone listens)."""
        if self.request.on_event is None:
            return
        try:
            update = json.loads(line).get("assistantMessageEvent") or {}
        except (ValueError, AttributeError):  # a line cut short: the whole message still comes at its end
            return
        if isinstance(update, dict) and update.get("type") == "text_delta" and update.get("delta"):
            self.request.emit("text", Message(role="assistant", content=str(update["delta"])))


@contextlib.contextmanager
def _private_dir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="machine-pi-"))  # 0700
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _stop(process: asyncio.subprocess.Process, grace_s: float) -> None:
    """End pi and all it started: SIGTERM to its process group (pi closes its session), then SIGKILL."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            with anyio.move_on_after(grace_s):
                await process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


class PiHarness:
    """Runs each run's agent loop in pi, with the run's tools, model and instructions only."""

    name = "pi"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        binary: str | Path | None = None,
        max_retries: int = 4,
        retry_delay_s: float = 1.0,
        stop_grace_s: float = 2.0,
    ) -> None:
        self.base_url = base_url
        self.binary = find_binary("pi", "MACHINE_PI", INSTALL, binary)
        self.max_retries = max_retries
        """Pi's retries of a failed model call (429, 5xx, network), waiting ``retry_delay_s`` doubling."""
        self.retry_delay_s = retry_delay_s
        self.stop_grace_s = stop_grace_s

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint the judges share with the runs (with ``base_url``), else None."""
        return judge_endpoint(self.base_url)

    async def aclose(self) -> None:
        """Nothing to close: each run's pi process and tool server end with the run."""

    async def run(self, request: HarnessRequest) -> HarnessResult:
        binary = self.binary
        route = route_model(request.model, harness=self.name, base_url=self.base_url)
        progress = _Progress(request, [Message(role="user", content=request.input)])
        if request.max_steps <= 0:
            return self._result(progress, "max_steps", None)
        timeout_s = _timeout()
        with _private_dir() as root:
            async with served_tools(request) as served:
                stop_reason, error = await self._run_pi(
                    binary, route, request, root, served, progress, timeout_s
                )
        if served is not None and error:
            error = error.replace(served.token, "<token>")
        return self._result(progress, stop_reason, error)

    def _result(self, progress: _Progress, stop_reason: str, error: str | None) -> HarnessResult:
        trajectory = progress.trajectory
        output = next((m.content for m in reversed(trajectory) if m.role == "assistant"), "")
        return HarnessResult(
            trajectory=trajectory,
            output=output,
            usage=progress.usage,
            cost_usd=progress.cost,
            stop_reason=stop_reason,
            error=error,
            retries=progress.retries,
        )

    def _arguments(
        self, route: Route, request: HarnessRequest, root: Path, cwd: Path, timeout_s: float
    ) -> tuple[list[str], dict[str, str]]:
        """Pi's command line and the files it reads: agent directory, extension, instructions, session."""
        agent = root / "agent"
        agent.mkdir()
        models, declare = model_config(route, request)
        config = settings(max_retries=self.max_retries, retry_delay_s=self.retry_delay_s, timeout_s=timeout_s)
        (agent / "models.json").write_text(json.dumps(models, indent=2))
        (agent / "settings.json").write_text(json.dumps(config, indent=2))
        extension = root / "machine_tools.ts"
        extension.write_text(
            render_extension(
                {
                    "instructions": request.instructions,
                    "tools": [
                        {"name": t.name, "description": t.description, "parameters": t.parameters}
                        for t in request.tools
                    ],
                    "declare": declare,
                    "maxSteps": request.max_steps,
                    "historyTurns": sum(1 for m in request.history if m.role == "assistant"),
                    "uncapped": not route.own,
                }
            )
        )
        instructions = root / "instructions.md"
        instructions.write_text(request.instructions)
        args = ["--mode", "json", "-p", "--offline", "--extension", str(extension)]
        args += [
            "--no-extensions",
            "--no-skills",
            "--no-prompt-templates",
            "--no-themes",
            "--no-context-files",
        ]
        args += ["--no-builtin-tools", "--system-prompt", str(instructions)]
        args += ["--provider", route.provider, "--model", route.model]
        if request.effort is not None:
            args += ["--thinking", THINKING.get(request.effort.name, request.effort.name)]
        if request.history:
            session = root / "session.jsonl"
            session.write_text(session_file(request.history, route, cwd))
            args += ["--session", str(session)]
        else:
            args += ["--no-session"]
        env_extra = {
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            # OpenRouter attribution headers (HTTP-Referer: https://pi.dev) need telemetry; offline: no ping
            "PI_TELEMETRY": "1" if route.provider == "openrouter" else "0",
            "TMPDIR": str(root / "tmp"),
        }
        (root / "tmp").mkdir()
        return args, env_extra

    async def _run_pi(
        self,
        binary: str,
        route: Route,
        request: HarnessRequest,
        root: Path,
        served: Any,
        progress: _Progress,
        timeout_s: float,
    ) -> tuple[str, str | None]:
        """Run pi to the end (or to ``max_steps``, or the time limit); the stop reason and any error."""
        # Pi works in a private folder, never the sandbox: it merges any .pi/settings.json of its working
        # folder over ours, and a run's files (or a person's project) are no place for pi's settings.
        # The tools act in the sandbox through the tool server wherever pi runs.
        cwd = root / "work"
        cwd.mkdir()
        args, extra = self._arguments(route, request, root, cwd, timeout_s)
        if served is not None:
            extra[URL_ENV], extra[TOKEN_ENV] = served.url, served.token
        (root / "home").mkdir(mode=0o700)
        env = host_environment(route, root / "home", extra, own_keys=route.own)
        process = await asyncio.create_subprocess_exec(
            binary,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            limit=LINE_LIMIT,
        )
        said, limit = "", timeout_s * (request.max_steps + 1)
        try:
            with anyio.move_on_after(limit) as scope:
                said = await self._watch(process, request.input, progress)
        finally:
            await _stop(process, self.stop_grace_s)
        if progress.max_steps:
            return "max_steps", None
        if progress.finished:  # pi finished the run; how it then exited does not matter
            return "end_turn", None
        if scope.cancelled_caught:
            return "error", f"pi did not finish the run within {limit:g} s (MACHINE_MODEL_TIMEOUT per step)"
        if progress.error is not None:
            where = f"{route.provider} ({route.base_url})" if route.base_url else route.provider
            tries = f" after {len(progress.retries) + 1} attempts" if progress.retries else ""
            reason = f"pi's call to {request.model!r} at {where} failed{tries}: {progress.error}"
            if "timed out" in progress.error.lower():
                reason += f" (a model call may take MACHINE_MODEL_TIMEOUT={timeout_s:g} s)"
            return "error", reason
        if process.returncode:
            return "error", f"pi exited with status {process.returncode}: {said or 'it printed no reason'}"
        return "error", f"pi ended without a reply from the model: {said or 'it printed no reason'}"

    async def _watch(self, process: asyncio.subprocess.Process, input: str, progress: _Progress) -> str:
        """Feed pi the input and follow its events until it ends the run or reaches ``max_steps``;
        the tail of what it said on stderr."""
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        said = bytearray()
        drained = anyio.Event()

        async def feed() -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                stdin.write(input.encode())
                await stdin.drain()
                stdin.close()

        async def drain() -> None:
            while chunk := await stderr.read(65536):
                said.extend(chunk)
                del said[:-STDERR_KEEP]
            drained.set()

        async with anyio.create_task_group() as group:
            group.start_soon(feed)
            group.start_soon(drain)
            while True:
                try:
                    line = await stdout.readline()
                except ValueError:  # an event longer than LINE_LIMIT: pi is stopped, the run fails
                    progress.error = f"pi printed an event longer than {LINE_LIMIT} bytes"
                    break
                if not line:
                    break
                if line.startswith(b'{"type":"message_update"'):
                    progress.text_delta(line.decode())
                    continue
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if isinstance(event, dict):
                        progress.event(event)
                if progress.max_steps or progress.finished:
                    break
            if not progress.max_steps:  # pi exits on its own at the end of a run
                with anyio.move_on_after(self.stop_grace_s):
                    await process.wait()
                    await drained.wait()
            group.cancel_scope.cancel()
        return said.decode(errors="replace").strip()


__all__ = ["PiHarness"]
