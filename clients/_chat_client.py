"""One model call at a time to a chat-completions endpoint, with a timeout and bounded retries.

429s (honouring Retry-After), 5xx and network errors are retried with exponential backoff and jitter,
and every retry is recorded on the turn; refusals and unparsable replies fail at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from machine.errors import HarnessError
from machine.runs import Budget, Effort, Message, ToolCall, Turn, Usage

from ._endpoint import Endpoint
from ._wire import (
    ReplyError,
    error_message,
    prompt_bound,
    provider_field,
    retry_after,
    tool_arguments,
    usage_of,
)


class ModelCallError(HarnessError):
    """A model call that failed for good; ``retries`` says what was tried before."""

    def __init__(self, message: str, retries: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.retries = retries or []


@dataclass
class _Stream:
    """A streamed reply put back together."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    usage: Any = None


class ChatClient:
    """Calls one endpoint's models, one reply at a time, retrying transient failures."""

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
        """The SDK's client, made on first use (the SDK's own retries off)."""
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
        budget: Budget | None = None,
        kind: str = "runs",
    ) -> Turn:
        """One model reply, retried on transient failures; raises ModelCallError when it gives up.

        Given a ``budget``, the call is made under its reservation of the most it can cost (the prompt's
        upper bound and ``max_tokens``) and the turn carries what it cost, charged as ``kind``."""
        await self._bind()
        # The SDK checks every message and tool against its typed schemas before sending: about 5 ms a
        # call at 40 messages, and more at every step of a run. Ours are already in the wire format, so
        # they go in ``extra_body``, which the SDK sends as given (it replaces the empty ``messages``).
        wire: dict[str, Any] = {"messages": messages}
        if tools:
            wire["tools"] = tools
        kwargs: dict[str, Any] = {"model": self.endpoint.model_id(model), "messages": [], "extra_body": wire}
        kwargs["max_tokens"] = self.endpoint.max_tokens
        if effort is not None:
            kwargs["reasoning_effort"] = effort.name
        if temperature is not None:
            kwargs["temperature"] = temperature
        if seed is not None:
            kwargs["seed"] = seed
        if budget is None:
            return await self._attempts(model, kwargs, on_text)
        bound = Usage(input_tokens=prompt_bound(wire), output_tokens=self.endpoint.max_tokens)
        async with budget.reserve(model, bound, kind=kind) as hold:
            turn = await self._attempts(model, kwargs, on_text)
            turn.cost_usd = hold.settle(turn.usage)
        return turn

    async def _attempts(
        self, model: str, kwargs: dict[str, Any], on_text: Callable[[str], None] | None
    ) -> Turn:
        """The call, tried up to ``max_attempts`` times."""
        import openai

        retries: list[dict[str, Any]] = []
        where = f"{self.endpoint.harness} ({self.endpoint.base_url})"
        for attempt in range(1, self.endpoint.max_attempts + 1):
            try:
                with anyio.fail_after(self.endpoint.timeout_s):
                    turn = await (self._stream(kwargs, on_text) if on_text else self._once(kwargs))
                turn.retries = retries
                return turn
            except (openai.APIError, TimeoutError, ValueError, KeyError, ReplyError) as error:
                reason, wait = self._failure(error, where, model, retries)
            if attempt == self.endpoint.max_attempts:
                break
            wait = min(wait, self.endpoint.max_backoff_s * 2) if wait is not None else self.backoff(attempt)
            retries.append({"attempt": attempt, "error": reason, "wait_s": round(wait, 3)})
            await self._sleep(wait)
        raise ModelCallError(
            f"{where} failed {self.endpoint.max_attempts} times calling {model!r}; last error: {reason}",
            [*retries, {"attempt": self.endpoint.max_attempts, "error": reason, "wait_s": 0.0}],
        )

    def _failure(
        self, error: Exception, where: str, model: str, retries: list[dict[str, Any]]
    ) -> tuple[str, float | None]:
        """Why a call failed and any wait the server asked for, when it is worth retrying; a refusal
        (4xx other than 429) or a reply that does not parse raises ModelCallError."""
        import openai

        if isinstance(error, openai.RateLimitError):
            return f"429 rate limited: {error_message(error)}", retry_after(error.response)
        if isinstance(error, openai.APIStatusError):
            if error.status_code < 500:
                raise ModelCallError(
                    f"{where} refused the call to {model!r}: {error.status_code} {error_message(error)}",
                    retries,
                ) from None
            return f"{error.status_code} server error: {error_message(error)}", None
        if isinstance(error, (openai.APITimeoutError, TimeoutError)):
            return f"no reply within {self.endpoint.timeout_s:g} s", None
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__
            detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            return f"network error: {error}{detail}", None
        if isinstance(error, (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, KeyError)):
            raise ModelCallError(f"{where} sent a reply that could not be parsed: {error}", retries) from None
        return f"error in the reply: {error_message(error)}", None  # an error object instead of a reply

    async def _once(self, kwargs: dict[str, Any]) -> Turn:
        reply = await self.client.chat.completions.create(**kwargs)
        if not getattr(reply, "choices", None):
            error = (getattr(reply, "model_extra", None) or {}).get("error")
            if error:  # a 200 that carries an error object (OpenRouter, when the upstream provider fails)
                raise ReplyError(error)
            raise ValueError("the reply has no choices")
        message = reply.choices[0].message
        calls = [
            ToolCall(
                id=c.id or f"call_{index}",
                name=c.function.name,
                arguments=tool_arguments(c.function.arguments),
                raw_arguments=c.function.arguments,
            )
            for index, c in enumerate(message.tool_calls or [])
        ]
        return Turn(
            Message(
                role="assistant",
                content=message.content or "",
                reasoning=provider_field(message, "reasoning_content", "reasoning"),
                tool_calls=calls,
            ),
            usage_of(reply.usage),
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
                reasoning = provider_field(delta, "reasoning_content", "reasoning")
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
                arguments=tool_arguments(slot["arguments"]),
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
            usage_of(got.usage),
        )
