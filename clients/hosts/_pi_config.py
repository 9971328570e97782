"""How a pi run is configured: its agent directory, extension, settings, session file and command line.

All of it goes in the run's private 0700 folder (also pi's HOME), so none of the person's own pi settings,
keys, extensions or context files load; the tool server's URL and token reach pi only through its
environment, and nothing written holds the token. Earlier turns become a session file that pi replays.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from machine.runs import HarnessRequest, Message

from .._routes import Route

URL_ENV = "MACHINE_PI_TOOLS_URL"
TOKEN_ENV = "MACHINE_PI_TOOLS_TOKEN"
DUMMY_KEY = "not-needed"
THINKING = {"none": "off"}
"""Our effort names that pi's ``--thinking`` spells otherwise (minimal ... xhigh are the same)."""

EXTENSION_FILE = "pi_extension.ts"
"""The extension's source, shipped with this package; ``render_extension`` fills in its placeholders."""


@functools.cache
def extension_source() -> str:
    """The extension's source with its placeholders, read from the package once."""
    return (
        importlib.resources.files("machine.clients.hosts")
        .joinpath(EXTENSION_FILE)
        .read_text(encoding="utf-8")
    )


def render_extension(config: Mapping[str, Any]) -> str:
    """The extension's source with the run's configuration (no secret: URL and token come from the env)."""
    return (
        extension_source()
        .replace("__MACHINE_CONFIG__", json.dumps(config, ensure_ascii=False))
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


def pi_arguments(
    route: Route, request: HarnessRequest, root: Path, cwd: Path, config: dict[str, Any]
) -> tuple[list[str], dict[str, str]]:
    """Pi's command line and extra environment, writing the files it reads into ``root``: agent
    directory (models and ``config``, its settings), extension, instructions and session."""
    agent = root / "agent"
    agent.mkdir()
    models, declare = model_config(route, request)
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
