"""The chat-completions harness: any OpenAI-compatible endpoint (Tinker, OpenRouter, Ollama, vLLM ...).

``ChatCompletionsHarness`` runs the shared agent loop on a ``ChatClient``; ``ModelRouter`` hands the
judges a client for whichever endpoint serves the judge model (the harness's own client, shared, when it
is the same endpoint: one pool of connections for a suite's runs and judges). The endpoint, wire format
and client live in modules of their own and are re-exported here.
"""

from __future__ import annotations

import os
from typing import Any

from machine.budget import Budget
from machine.errors import Fix, HarnessError
from machine.runs import Effort, HarnessRequest, HarnessResult, Message, Turn, openai_tools, run_loop

from .._endpoint import (
    DEFAULT_TIMEOUT_S,
    DRY_RUN,
    OPENROUTER_URL,
    TINKER_SERVICE,
    Endpoint,
    endpoint_for,
    model_timeout,
)
from .._wire import MessageCodec, to_openai, tools_json
from ._client import ChatClient, ModelCallError
from ._gateway_prices import published_prices


class ChatCompletionsHarness:
    """The agent loop on a chat-completions endpoint: tools as functions, results fed back."""

    def __init__(self, endpoint: Endpoint, *, client: ChatClient | None = None, stream: bool = True) -> None:
        self.endpoint = endpoint
        self.name = endpoint.harness
        self.client = client or ChatClient(endpoint)
        self.stream = stream
        self.codec = MessageCodec(send_reasoning=endpoint.send_reasoning)

    async def aclose(self) -> None:
        """Close the client's pooled connections (it opens new ones if used again)."""
        await self.client.aclose()

    async def run(self, request: HarnessRequest) -> HarnessResult:
        """Run the request's agent loop, streaming the reply's text when someone listens. Each message
        is encoded once: a step sends the conversation's bytes and encodes only what is new to it."""
        tools = tools_json(openai_tools(request.tools))
        on_text = None
        if self.stream and request.on_event is not None:

            def on_text(text: str) -> None:
                request.emit("text", Message(role="assistant", content=text))

        async def reply(messages: list[Message], step: int) -> Turn:
            return await self.client.complete(
                request.model,
                self.codec.prompt(request.instructions, messages, tools),
                effort=request.effort,
                on_text=on_text,
                budget=request.budget,
            )

        return await run_loop(request, reply)


class ModelRouter:
    """Clients for the judges: ``openrouter/...`` and ``tinker/...`` ids name their endpoint; any other
    id goes to the endpoint of the run's harness when that is a chat endpoint, else to the one
    ``MACHINE_HARNESS`` names when it names one, else to Tinker. Given a ``client`` (the run harness's),
    calls to its endpoint go through it, on the connections the runs already hold."""

    def __init__(self, default: Endpoint | None = None, *, client: ChatClient | None = None) -> None:
        self.default = default if default is not None or client is None else client.endpoint
        self._clients: dict[str, ChatClient] = {}
        if client is not None and self.default is not None and client.endpoint == self.default:
            self._clients[self.default.harness] = client

    def client_for(self, model: str) -> ChatClient:
        """The client of the endpoint that serves ``model``, made once per endpoint."""
        for harness in ("openrouter", "tinker"):
            if model.startswith(harness + "/"):
                break
        else:
            chosen = os.environ.get("MACHINE_HARNESS", "")
            fallback = chosen if chosen in ("tinker", "openrouter", "openai") else "tinker"
            harness = self.default.harness if self.default else fallback
        if harness not in self._clients:
            if self.default is not None and self.default.harness == harness:
                self._clients[harness] = ChatClient(self.default)
            else:
                other = [Fix("judge_model", "MODEL", "to pick another judge (or set MACHINE_JUDGE_MODEL)")]
                try:
                    self._clients[harness] = ChatClient(endpoint_for(harness, fixes=other))
                except HarnessError as error:
                    raise HarnessError(
                        f"judge model {model!r} is served by {harness}: {error.message}", fixes=error.fixes
                    ) from None
        return self._clients[harness]

    async def aclose(self) -> None:
        """Close every client's connections (each opens new ones if used again; closing a shared
        client twice is harmless)."""
        for client in self._clients.values():
            await client.aclose()

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        budget: Budget | None = None,
        kind: str = "grading",
    ) -> Turn:
        """One reply from ``model``, through the client of its endpoint (under ``budget``'s reservation)."""
        return await self.client_for(model).complete(
            model, messages, effort=effort, temperature=temperature, seed=seed, budget=budget, kind=kind
        )


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DRY_RUN",
    "OPENROUTER_URL",
    "TINKER_SERVICE",
    "ChatClient",
    "ChatCompletionsHarness",
    "Endpoint",
    "ModelCallError",
    "ModelRouter",
    "endpoint_for",
    "model_timeout",
    "published_prices",
    "to_openai",
]
