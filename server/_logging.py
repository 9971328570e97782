"""The server's log, sent to the client that asks for it (MCP logging). ``logging/setLevel`` sets the least
level a connection is sent; each record of the ``machine.server`` logger made while one of that
connection's requests is handled goes to it as ``notifications/message`` on that request's own stream,
before the request's answer. A connection that set no level is sent nothing (on the 2026-07-28 protocol,
which has no ``logging/setLevel``, each request asks for itself in its ``_meta``). The terminal's log is
unchanged: ``machine serve`` gives its stderr handler a level of its own, so a client that asks for
``debug`` never makes the terminal louder.

Only the SDK and the standard library are imported here: ``initialize`` must stay fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from typing import Any, Literal, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp_types import (
    LOG_LEVEL_META_KEY,
    EmptyResult,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RequestId,
    SetLevelRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

LOGGER = "machine.server"
Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LEVELS: dict[Level, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 60,
    "emergency": 70,
}
"""The protocol's levels (RFC 5424's, least severe first) as Python's logging numbers them."""
STATE_KEY = "machine.log_level"
DRAIN_S = 5.0
"""The longest a request's answer waits for its log to reach a client that stopped reading."""
_SHARED: dict[str, Any] = {}
"""Where the level is kept if the SDK ever stops giving a connection its own state: one for all."""


def level_of(levelno: int) -> Level:
    """The protocol's level of a Python record: the most severe one not above it."""
    found: Level = "debug"
    for name, number in LEVELS.items():
        if number <= levelno:
            found = name
    return found


def _state(session: ServerSession) -> dict[str, Any]:
    """The connection's own state (one per stdio process, one per HTTP session), which lives as long as
    the connection; the SDK gives it to each request's session."""
    state = getattr(getattr(session, "_connection", None), "state", None)
    return state if isinstance(state, dict) else _SHARED


async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
    """``logging/setLevel``: this connection is sent the server's log from ``params.level`` up."""
    _state(ctx.session)[STATE_KEY] = params.level
    open_to(LEVELS[params.level])
    return EmptyResult()


def wanted(ctx: ServerRequestContext[Any, Any]) -> int | None:
    """The least level this request's client is sent (None: nothing)."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        asked = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
    else:
        asked = _state(ctx.session).get(STATE_KEY)
    return LEVELS.get(cast(Level, asked)) if isinstance(asked, str) else None


def open_to(levelno: int) -> None:
    """Let the logger make records from ``levelno`` up (it only ever opens further; each destination
    keeps its own level)."""
    logger = logging.getLogger(LOGGER)
    if logger.getEffectiveLevel() > levelno:
        logger.setLevel(levelno)


class _Sink:
    """One request's log on its way to the client, in order, from whichever thread logged it."""

    def __init__(self, session: ServerSession, request_id: RequestId, least: int) -> None:
        self.session, self.request_id, self.least = session, request_id, least
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        self.queue: asyncio.Queue[logging.LogRecord | None] = asyncio.Queue()
        self.sender: asyncio.Task[None] | None = None
        self.closed = False

    def put(self, record: logging.LogRecord) -> None:
        if threading.get_ident() == self.thread:
            self._put(record)
        else:
            self.loop.call_soon_threadsafe(self._put, record)

    def _put(self, record: logging.LogRecord) -> None:
        if self.closed:
            return
        if self.sender is None:
            self.sender = self.loop.create_task(self._send())
        self.queue.put_nowait(record)

    async def _send(self) -> None:
        while (record := await self.queue.get()) is not None:
            said = LoggingMessageNotificationParams(
                level=level_of(record.levelno), logger=record.name, data=record.getMessage()
            )
            with contextlib.suppress(Exception):  # a client gone mid-call loses its log, not the call
                await self.session.send_notification(
                    LoggingMessageNotification(params=said), related_request_id=self.request_id
                )

    async def close(self) -> None:
        self.closed = True
        if self.sender is not None:
            self.queue.put_nowait(None)
            with anyio.move_on_after(DRAIN_S, shield=True):
                await asyncio.shield(self.sender)


_SINK: contextvars.ContextVar[_Sink | None] = contextvars.ContextVar("machine_server_log", default=None)


class ClientLog(logging.Handler):
    """Hands each record to the request being handled, where its client asked for that level."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = _SINK.get()
        if sink is None or record.levelno < sink.least:
            return
        try:
            sink.put(record)
        except Exception:  # a closed event loop: the record stays in the terminal's log only
            self.handleError(record)


async def forward_logs(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: while a request whose client asked for the log is handled, the server's records go
    to it; the answer waits until they have been sent."""
    least = wanted(ctx)
    if least is None or ctx.request_id is None:
        return await call_next(ctx)
    open_to(least)
    sink = _Sink(ctx.session, ctx.request_id, least)
    token = _SINK.set(sink)
    try:
        return await call_next(ctx)
    finally:
        _SINK.reset(token)
        await sink.close()


def attach() -> None:
    """Put ``ClientLog`` on the server's logger, once however many servers this process builds."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(h, ClientLog) for h in logger.handlers):
        logger.addHandler(ClientLog())
