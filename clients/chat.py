"""The chat-completions harness: any OpenAI-compatible endpoint (Tinker, OpenRouter, Ollama, vLLM ...).

One ``ChatClient`` makes one model call at a time with a timeout, retrying 429s (honouring
Retry-After), 5xx and network errors with bounded exponential backoff and jitter, and records each
retry. ``ChatCompletionsHarness`` runs the shared agent loop on it; ``ModelRouter`` hands the judges
a client for whichever endpoint serves the judge model.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from machine._effort import Effort
from machine._errors import BadInputError, HarnessError
from machine._harness import HarnessRequest, HarnessResult
from machine._loop import Turn, run_loop
from machine._runs import Message, ToolCall, Usage

TINKER_SERVICE = "https://tinker.thinkingmachines.dev/services/tinker-prod"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
DEFAULT_TIMEOUT_S = 120.0


class ModelCallError(HarnessError):
    """A model call that failed for good; ``retries`` says what was tried before."""

    def __init__(self, message: str, retries: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.retries = retries or []


@dataclass(frozen=True)
class Endpoint:
    harness: str
    base_url: str
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    send_reasoning: bool = False
    """Send earlier steps' reasoning back with the conversation (Tinker keeps it in the prompt)."""
    headers: dict[str, str] = field(default_factory=dict)

    def model_id(self, model: str) -> str:
        """The id the endpoint knows (a ``tinker/`` or ``openrouter/`` prefix names the harness).

        ``openai/`` is not a routing prefix: it is part of real ids (``openai/gpt-oss-20b`` on vLLM,
        ``openai/gpt-4o`` on a gateway), so the openai harness sends the id as given."""
        prefix = self.harness + "/"
        routed = self.harness in ("tinker", "openrouter") and model.startswith(prefix)
        return model[len(prefix) :] if routed else model


def _timeout() -> float:
    raw = os.environ.get("MACHINE_MODEL_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise BadInputError(f"MACHINE_MODEL_TIMEOUT={raw!r} is not a number of seconds") from None


DRY_RUN_HINT = "or pass --harness echo for a free dry run (or --harness scripted --script FILE)"


def endpoint_for(harness: str, *, base_url: str | None = None, hint: str = DRY_RUN_HINT) -> Endpoint:
    """The endpoint of a remote harness from the environment; a missing key or URL says what to set
    (and ``hint``, what else to do)."""
    timeout = _timeout()
    if harness == "tinker":
        key = os.environ.get("TINKER_API_KEY")
        if not key:
            raise HarnessError(
                f"the tinker harness needs TINKER_API_KEY: set it (export TINKER_API_KEY=...), {hint}"
            )
        service = os.environ.get("TINKER_BASE_URL", TINKER_SERVICE).rstrip("/")
        url = base_url or f"{service}/oai/api/v1"
        return Endpoint("tinker", url, key, timeout_s=timeout, send_reasoning=True)
    if harness == "openrouter":
        key = os.environ.get("OPENROUTER_API_KEY")
        if not key:
            raise HarnessError(
                "the openrouter harness needs OPENROUTER_API_KEY: set it (export OPENROUTER_API_KEY=...), "
                + hint
            )
        url = base_url or os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL)
        return Endpoint("openrouter", url, key, timeout_s=timeout)
    if harness == "openai":
        given = base_url or os.environ.get("OPENAI_BASE_URL")
        if not given:
            raise HarnessError(
                "the openai harness needs an endpoint: pass --base-url URL or set OPENAI_BASE_URL "
                f"(for example http://127.0.0.1:11434/v1 for Ollama), {hint}"
            )
        return Endpoint("openai", given, os.environ.get("OPENAI_API_KEY"), timeout_s=timeout)
    raise BadInputError(f"{harness!r} is not a chat-completions harness (tinker, openrouter or openai)")


def to_openai(instructions: str, messages: list[Message], *, send_reasoning: bool) -> list[dict[str, Any]]:
    """Our messages in the chat-completions wire format, the instructions as the system message."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for m in messages:
        if m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments
                            if c.raw_arguments is not None
                            else json.dumps(c.arguments or {}),
                        },
                    }
                    for c in m.tool_calls
                ]
            if send_reasoning and m.reasoning:
                item["reasoning_content"] = m.reasoning
            wire.append(item)
        elif m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def _arguments(raw: str | None) -> dict[str, Any] | None:
    """Parsed tool-call arguments, or None when the model's JSON does not parse to an object."""
    if raw is None or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _extra(obj: Any, *names: str) -> Any:
    """A provider field the SDK does not declare (``reasoning_content``, ``reasoning``)."""
    for name in names:
        value = getattr(obj, name, None)
        if value is None:
            value = (getattr(obj, "model_extra", None) or {}).get(name)
        if value:
            return value
    return None


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", 0) or 0,
        cached_input_tokens=cached,
        output_tokens=getattr(raw, "completion_tokens", 0) or 0,
    )


def _retry_after(response: Any) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date), if the reply carried one."""
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(float(when.timestamp()) - time.time(), 0.0) if when else None


@dataclass
class _Stream:
    """A streamed reply put back together."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    usage: Any = None


class ChatClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = endpoint
        self._sleep = sleep or anyio.sleep
        self._jitter = jitter
        self._client: Any = None
        self._loop: object | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI  # heavy: only when a model is really called

            self._client = AsyncOpenAI(
                base_url=self.endpoint.base_url,
                api_key=self.endpoint.api_key or "not-needed",
                max_retries=0,
                timeout=self.endpoint.timeout_s,
                default_headers=self.endpoint.headers or None,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections; the next call opens new ones."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # connections of a loop that has ended cannot close cleanly
                await client.close()

    async def _bind(self) -> None:
        """Pooled connections belong to the event loop that opened them, and an interactive
        ``machine run`` runs each exchange in a loop of its own: a call on a new loop closes the old
        client and opens a new one."""
        try:
            loop: object | None = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): one loop per process is assumed
            loop = None
        if self._client is not None and loop is not self._loop:
            await self.aclose()
        self._loop = loop

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter, bounded: attempt 1 waits about ``backoff_s``."""
        ceiling = min(self.endpoint.max_backoff_s, self.endpoint.backoff_s * 2.0 ** (attempt - 1))
        return float(ceiling * (0.5 + self._jitter() / 2))

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Turn:
        """One model reply, retried on transient failures; raises ModelCallError when it gives up."""
        import openai

        await self._bind()
        # The SDK checks every message and tool against its typed schemas before sending: about 5 ms a
        # call at 40 messages, and more at every step of a run. Ours are already in the wire format, so
        # they go in ``extra_body``, which the SDK sends as given (it replaces the empty ``messages``).
        wire: dict[str, Any] = {"messages": messages}
        if tools:
            wire["tools"] = tools
        kwargs: dict[str, Any] = {"model": self.endpoint.model_id(model), "messages": [], "extra_body": wire}
        if effort is not None:
            kwargs["reasoning_effort"] = effort.name
        if temperature is not None:
            kwargs["temperature"] = temperature
        if seed is not None:
            kwargs["seed"] = seed
        retries: list[dict[str, Any]] = []
        where = f"{self.endpoint.harness} ({self.endpoint.base_url})"
        for attempt in range(1, self.endpoint.max_attempts + 1):
            wait: float | None
            try:
                with anyio.fail_after(self.endpoint.timeout_s):
                    turn = await (self._stream(kwargs, on_text) if on_text else self._once(kwargs))
                turn.retries = retries
                return turn
            except openai.RateLimitError as error:
                reason, wait = f"429 rate limited: {_message(error)}", _retry_after(error.response)
            except openai.APIStatusError as error:
                if error.status_code < 500:
                    raise ModelCallError(
                        f"{where} refused the call to {model!r}: {error.status_code} {_message(error)}",
                        retries,
                    ) from None
                reason, wait = f"{error.status_code} server error: {_message(error)}", None
            except (openai.APITimeoutError, TimeoutError):
                reason, wait = f"no reply within {self.endpoint.timeout_s:g} s", None
            except openai.APIConnectionError as error:
                cause = error.__cause__
                detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
                reason, wait = f"network error: {error}{detail}", None
            except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, KeyError) as error:
                raise ModelCallError(
                    f"{where} sent a reply that could not be parsed: {error}", retries
                ) from None
            except (openai.APIError, _ReplyError) as error:  # an error object instead of a reply
                reason, wait = f"error in the reply: {_message(error)}", None
            if attempt == self.endpoint.max_attempts:
                break
            wait = min(wait, self.endpoint.max_backoff_s * 2) if wait is not None else self.backoff(attempt)
            retries.append({"attempt": attempt, "error": reason, "wait_s": round(wait, 3)})
            await self._sleep(wait)
        raise ModelCallError(
            f"{where} failed {self.endpoint.max_attempts} times calling {model!r}; last error: {reason}",
            [*retries, {"attempt": self.endpoint.max_attempts, "error": reason, "wait_s": 0.0}],
        )

    async def _once(self, kwargs: dict[str, Any]) -> Turn:
        reply = await self.client.chat.completions.create(**kwargs)
        if not getattr(reply, "choices", None):
            error = (getattr(reply, "model_extra", None) or {}).get("error")
            if error:  # a 200 that carries an error object (OpenRouter, when the upstream provider fails)
                raise _ReplyError(error)
            raise ValueError("the reply has no choices")
        message = reply.choices[0].message
        calls = [
            ToolCall(
                id=c.id or f"call_{index}",
                name=c.function.name,
                arguments=_arguments(c.function.arguments),
                raw_arguments=c.function.arguments,
            )
            for index, c in enumerate(message.tool_calls or [])
        ]
        return Turn(
            Message(
                role="assistant",
                content=message.content or "",
                reasoning=_extra(message, "reasoning_content", "reasoning"),
                tool_calls=calls,
            ),
            _usage(reply.usage),
        )

    async def _stream(self, kwargs: dict[str, Any], on_text: Callable[[str], None]) -> Turn:
        stream = await self.client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        got = _Stream()
        chosen = False
        async for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                got.usage = chunk.usage
            chosen = chosen or bool(chunk.choices)
            for choice in chunk.choices or []:
                delta = choice.delta
                reasoning = _extra(delta, "reasoning_content", "reasoning")
                if reasoning:
                    got.reasoning.append(reasoning)
                if delta.content:
                    got.text.append(delta.content)
                    on_text(delta.content)
                for call in delta.tool_calls or []:
                    slot = got.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
        if not chosen:
            raise ValueError("the streamed reply has no choices")
        calls = [
            ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments=_arguments(slot["arguments"]),
                raw_arguments=slot["arguments"],
            )
            for index, slot in sorted(got.calls.items())
        ]
        return Turn(
            Message(
                role="assistant",
                content="".join(got.text),
                reasoning="".join(got.reasoning) or None,
                tool_calls=calls,
            ),
            _usage(got.usage),
        )


class _ReplyError(Exception):
    """A reply that is an error object (``{"error": {...}}``) with status 200."""

    def __init__(self, body: Any) -> None:
        super().__init__(str(body))
        self.body = body


def _message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))


class ChatCompletionsHarness:
    """The agent loop on a chat-completions endpoint: tools as functions, results fed back."""

    def __init__(self, endpoint: Endpoint, *, client: ChatClient | None = None, stream: bool = True) -> None:
        self.endpoint = endpoint
        self.name = endpoint.harness
        self.client = client or ChatClient(endpoint)
        self.stream = stream

    async def run(self, request: HarnessRequest) -> HarnessResult:
        tools = [{"type": "function", "function": t.spec()} for t in request.tools] or None
        on_text = None
        if self.stream and request.on_event is not None:

            def on_text(text: str) -> None:
                request.emit("text", Message(role="assistant", content=text))

        async def reply(messages: list[Message], step: int) -> Turn:
            wire = to_openai(request.instructions, messages, send_reasoning=self.endpoint.send_reasoning)
            return await self.client.complete(
                request.model, wire, tools=tools, effort=request.effort, on_text=on_text
            )

        return await run_loop(request, reply)


class ModelRouter:
    """Clients for the judges: ``openrouter/...`` and ``tinker/...`` ids name their endpoint; any other
    id goes to the endpoint of the run's harness when that is a chat endpoint, else to the one
    ``MACHINE_HARNESS`` names when it names one, else to Tinker."""

    def __init__(self, default: Endpoint | None = None) -> None:
        self.default = default
        self._clients: dict[str, ChatClient] = {}

    def client_for(self, model: str) -> ChatClient:
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
                hint = "or pick another judge with --judge-model (or MACHINE_JUDGE_MODEL)"
                try:
                    self._clients[harness] = ChatClient(endpoint_for(harness, hint=hint))
                except HarnessError as error:
                    raise HarnessError(f"judge model {model!r} is served by {harness}: {error}") from None
        return self._clients[harness]

    async def aclose(self) -> None:
        """Close every client's connections (each opens new ones if used again)."""
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
    ) -> Turn:
        return await self.client_for(model).complete(
            model, messages, effort=effort, temperature=temperature, seed=seed
        )
