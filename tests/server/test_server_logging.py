"""The server's log sent to the client at the level it set (``logging/setLevel``; on the 2026-07-28
protocol, the level each request asks for): nothing before it asks, each record of ``machine.server`` made
while its call is handled from that level up, before the call's answer, and only to the connection that
asked. The terminal's log stays as it was. Through the SDK's client in this process, and over real stdio
and streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.served_http import TOKEN, http_client, start, stop
from helpers.server_workspace import Folder, make_server
from mcp import Client, StdioServerParameters
from mcp_types import LoggingMessageNotificationParams

DEPRECATED = (
    "ignore::mcp.shared.exceptions.MCPDeprecationWarning"  # logging/setLevel, kept for 2025-11-25 clients
)
pytestmark = [pytest.mark.filterwarnings(DEPRECATED)]
LIMIT = 60
REHEARSE = {"name": "red", "budget_usd": 0.5, "cases": "holdout.json"}
CONSENT = "rehearse red: allowance consent, correlation id "
"""The info line the server logs once a spending call has its consent."""


@pytest.fixture(autouse=True)
def logger_level_kept() -> Iterator[None]:
    """A client that asks for the log opens the server's logger in this process: put it back after."""
    logger = logging.getLogger("machine.server")
    level = logger.level
    yield
    logger.setLevel(level)


class Heard:
    """The log messages a client was sent, and how many had come when each call answered."""

    def __init__(self) -> None:
        self.messages: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.messages.append(params)

    def said(self) -> list[tuple[str, str | None, str]]:
        return [(m.level, m.logger, str(m.data)) for m in self.messages]


async def rehearse_at(client: Client, heard: Heard, level: str | None) -> list[tuple[str, str | None, str]]:
    """What the client had been sent by the time a rehearse answered, with ``level`` set first."""
    if level is not None:
        assert (await client.set_logging_level(level)).model_dump(exclude_none=True) == {}  # type: ignore[arg-type]
    before = len(heard.messages)
    result = await client.call_tool("rehearse", REHEARSE)
    assert not result.is_error, result.content
    return heard.said()[before:]


def consent_lines(said: list[tuple[str, str | None, str]]) -> list[tuple[str, str | None]]:
    return [(level, logger) for level, logger, data in said if data.startswith(CONSENT)]


async def test_nothing_is_sent_until_the_client_sets_a_level_then_from_that_level_up(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    heard = Heard()
    with anyio.fail_after(LIMIT):
        async with Client(server, mode="legacy", logging_callback=heard) as client:
            declared = client.server_capabilities.logging
            unasked = await rehearse_at(client, heard, None)
            warnings = await rehearse_at(client, heard, "warning")
            info = await rehearse_at(client, heard, "info")
    assert declared is not None
    assert unasked == [] and warnings == []  # the consent line is info: below what was asked
    assert consent_lines(info) == [("info", "machine.server")]  # there before the call answered


async def test_on_the_newer_protocol_each_request_asks_for_its_own_log(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    quiet, loud = Heard(), Heard()
    with anyio.fail_after(LIMIT):
        async with Client(server, logging_callback=quiet) as client:
            era = client.protocol_version
            unasked = await rehearse_at(client, quiet, None)
        async with Client(server, logging_callback=loud, log_level="info") as client:
            asked = await rehearse_at(client, loud, None)
    assert era == "2026-07-28"
    assert unasked == [] and consent_lines(asked) == [("info", "machine.server")]


@pytest.mark.slow
async def test_over_stdio_the_level_set_is_the_level_sent(folder: Folder) -> None:
    env = clean_env({"MACHINE_ALLOW_SPEND_USD": "5"})
    params = StdioServerParameters(command=str(MACHINE_BIN), args=folder.serve_args(), env=env)
    heard = Heard()
    with anyio.fail_after(LIMIT):
        async with Client(params, mode="legacy", logging_callback=heard) as client:
            unasked = await rehearse_at(client, heard, None)
            asked = await rehearse_at(client, heard, "debug")
    assert unasked == [] and consent_lines(asked) == [("info", "machine.server")]


@pytest.mark.slow
async def test_over_http_only_the_session_that_asked_is_sent_it_and_the_terminal_stays_quiet(
    folder: Folder,
) -> None:
    served = start(folder, {"MACHINE_SERVER_TOKEN": TOKEN, "MACHINE_ALLOW_SPEND_USD": "5"})
    asking, other = Heard(), Heard()
    try:
        with anyio.fail_after(LIMIT):
            async with (
                http_client(served, logging_callback=asking) as first,
                http_client(served, logging_callback=other) as second,
            ):
                asked = await rehearse_at(first, asking, "debug")
                unasked = await rehearse_at(second, other, None)
    finally:
        log = stop(served)
    assert consent_lines(asked) == [("info", "machine.server")]
    assert unasked == [] and other.messages == []
    assert CONSENT not in log  # the server's stderr keeps its own level (warnings)
