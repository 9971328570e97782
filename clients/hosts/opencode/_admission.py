"""Declaring each run's agent and provider to opencode, only while no run is in flight.

Changing opencode's configuration restarts its instances, which aborts every session running.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from machine.clients._routes import Route
from machine.errors import Fix, HarnessError
from machine.runs import LEVELS, HarnessRequest

from ._mapping import MCP_NAME
from ._server import _check


def _needs(route: Route, request: HarnessRequest) -> tuple[str, dict[str, dict[str, Any]]]:
    """The run's agent name, and the configuration it needs (by key: the patch that declares it).

    The agent's prompt is the machine's instructions and opencode's own tools are off for it; a model
    not of opencode's own providers is declared as an OpenAI-compatible provider."""
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


class _Admission:
    """The runs in flight on one server, and what has been declared to it and checked with it."""

    def __init__(self) -> None:
        self._gate = anyio.Condition()
        self._running = 0
        self._declaring = 0
        self._declared: set[str] = set()
        self._checked: set[str] = set()

    def forget(self) -> None:
        """The server is gone: a new one has nothing declared or checked."""
        self._declared.clear()
        self._checked.clear()

    @contextlib.asynccontextmanager
    async def admitted(
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

    async def check_model(self, http: httpx.AsyncClient, route: Route) -> None:
        """A model of opencode's own providers must be one it knows, else the run fails with a clear
        message rather than opencode's "unknown error" (checked once per model)."""
        key = f"{route.provider}/{route.model}"
        if not route.own or key in self._checked:
            return
        reply = await http.get("/config/providers")
        _check(reply, "could not list opencode's providers")
        providers = {p.get("id"): p for p in reply.json().get("providers", [])}
        if route.provider not in providers:
            known = ", ".join(sorted(str(p) for p in providers)) or "none"
            raise HarnessError(
                f"opencode has no provider {route.provider!r} (is its key set? its providers: {known}): give "
                "a Tinker id or openrouter/<id>",
                fixes=[Fix("base_url", "URL", "for an OpenAI-compatible endpoint")],
            )
        models = providers[route.provider].get("models") or {}
        if route.model not in models:
            some = ", ".join(sorted(models)[:12]) or "none"
            raise HarnessError(
                f"opencode's provider {route.provider!r} has no model {route.model!r}; it has: {some}"
            )
        self._checked.add(key)
