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
from typing import Any

import anyio

from machine.budget import Budget
from machine.errors import HarnessError
from machine.runs import Effort, Turn, Usage

from .._endpoint import Endpoint
from .._wire import Prompt, ReplyError, StatusError, error_message, retry_after
from ._http import Transport, Url
from ._http_proxied import transport_for
from ._http_stream import HttpError
from ._reply import StreamedTurn, completion_turn, loads
from ._sse import SSEParser


class ModelCallError(HarnessError):
    """A model call that failed for good; ``retries`` says what was tried before."""

    def __init__(self, message: str, retries: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.retries = retries or []


def _headers(endpoint: Endpoint) -> dict[str, str]:
    """What every call sends; the endpoint's own headers win (whatever their case)."""
    sent = {
        "content-type": ("Content-Type", "application/json"),
        "accept": ("Accept", "application/json"),
        "accept-encoding": ("Accept-Encoding", "identity"),
        "user-agent": ("User-Agent", "machine"),
        "authorization": ("Authorization", f"Bearer {endpoint.api_key or 'not-needed'}"),
    }
    sent.update({name.lower(): (name, value) for name, value in endpoint.headers.items()})
    for name, value in sent.values():
        if any(c in name + value for c in "\r\n\0"):
            raise HarnessError(
                f"the {name} header for {endpoint.harness} holds a line break: "
                "set it (or its key) on one line"
            )
    return dict(sent.values())


def _events(got: StreamedTurn, events: list[bytes]) -> bool:
    """Add a stream's events to the turn; True at ``[DONE]``."""
    for data in events:
        if data.startswith(b"[DONE]"):
            return True
        got.add(loads(data))
    return False


class ChatClient:
    """Calls one endpoint's models, one reply at a time, retrying transient failures. Its connections are
    pooled: share one client among the runs (and judges) that call the same endpoint."""

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
        self._client: Transport | None = None
        self._loop: object | None = None
        self._url: Url | None = None
        self._headers: dict[str, str] = {}

    @property
    def url(self) -> Url:
        """Where the calls go: the endpoint's ``/chat/completions``."""
        if self._url is None:
            given = self.endpoint.base_url
            try:
                url = Url.parse(given.rstrip("/") + "/chat/completions")
            except ValueError:
                raise HarnessError(
                    f"the base URL of {self.endpoint.harness}, {given!r}, is not an http:// or https:// URL: "
                    "set it to one (for example http://127.0.0.1:11434/v1)"
                ) from None
            self._headers = _headers(self.endpoint)
            self._url = url
        return self._url

    @property
    def client(self) -> Transport:
        """The connection pool (httpx, when a proxy is set), made on first use."""
        if self._client is None:
            self._client = transport_for(self.url, self.endpoint.timeout_s)
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections; the next call opens new ones."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # connections of a loop that has ended cannot close cleanly
                await client.aclose()

    async def _bind(self) -> None:
        """Pooled connections belong to the event loop that opened them, and an interactive
        ``machine run`` runs each exchange in a loop of its own: a call on a new loop closes the old
        pool and opens a new one."""
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
        messages: list[dict[str, Any]] | Prompt,
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

        ``messages`` are wire-format dicts, or a ``Prompt`` already encoded (with its tools). Given a
        ``budget``, the call is made under its reservation of the most it can cost (the prompt's upper
        bound and ``max_tokens``) and the turn carries what it cost, charged as ``kind``."""
        await self._bind()
        prompt = messages if isinstance(messages, Prompt) else Prompt.of(messages, tools)
        options: dict[str, Any] = {"max_tokens": self.endpoint.max_tokens}
        if effort is not None:
            options["reasoning_effort"] = effort.name
        if temperature is not None:
            options["temperature"] = temperature
        if seed is not None:
            options["seed"] = seed
        if on_text is not None:
            options.update(stream=True, stream_options={"include_usage": True})
        body = prompt.body(self.endpoint.model_id(model), options)
        if budget is None:
            return await self._attempts(model, body, on_text)
        bound = Usage(input_tokens=prompt.bound(), output_tokens=self.endpoint.max_tokens)
        async with budget.reserve(model, bound, kind=kind) as hold:
            turn = await self._attempts(model, body, on_text)
            turn.cost_usd = hold.settle(turn.usage)
        return turn

    async def _attempts(self, model: str, body: bytes, on_text: Callable[[str], None] | None) -> Turn:
        """The call, tried up to ``max_attempts`` times."""
        retries: list[dict[str, Any]] = []
        where = f"{self.endpoint.harness} ({self.endpoint.base_url})"
        for attempt in range(1, self.endpoint.max_attempts + 1):
            try:
                with anyio.fail_after(self.endpoint.timeout_s):
                    turn = await (self._stream(body, on_text) if on_text else self._once(body))
                turn.retries = retries
                return turn
            except (HttpError, StatusError, OSError, ValueError, KeyError, ReplyError) as error:
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
        if isinstance(error, StatusError):
            if error.status == 429:
                return f"429 rate limited: {error_message(error)}", retry_after(error.headers)
            if error.status < 500:
                raise ModelCallError(
                    f"{where} refused the call to {model!r}: {error.status} {error_message(error)}", retries
                ) from None
            return f"{error.status} server error: {error_message(error)}", None
        if isinstance(error, TimeoutError):
            return f"no reply within {self.endpoint.timeout_s:g} s", None
        if isinstance(error, (HttpError, OSError)):
            cause = error.__cause__
            detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            return f"network error: {error}{detail}", None
        if isinstance(error, (ValueError, KeyError)):
            raise ModelCallError(f"{where} sent a reply that could not be parsed: {error}", retries) from None
        return f"error in the reply: {error_message(error)}", None  # an error object instead of a reply

    async def _once(self, body: bytes) -> Turn:
        reply = await self.client.post(self.url, self._headers, body)
        try:
            raw = await reply.read()
        finally:
            await reply.aclose()
        if reply.status >= 300:
            raise StatusError(reply.status, reply.headers, raw)
        return completion_turn(json.loads(raw))

    async def _stream(self, body: bytes, on_text: Callable[[str], None]) -> Turn:
        reply = await self.client.post(self.url, self._headers, body)
        try:
            if reply.status >= 300:
                raise StatusError(reply.status, reply.headers, await reply.read())
            got, events, done = StreamedTurn(on_text), SSEParser(), False
            async for piece in reply:  # after [DONE], read to the end: the connection goes back to the pool
                done = done or _events(got, events.feed(piece))
            if not done:
                _events(got, events.close())
        finally:
            await reply.aclose()
        return got.turn()
