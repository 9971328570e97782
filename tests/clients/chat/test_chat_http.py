"""The chat client's own HTTP/1.1 pool against the local stand-in endpoint (and, for what it cannot
script, a few bytes from a loopback socket): connections kept and reused, a stale one replaced once,
bodies chunked or by length, timeouts, replies too large or not HTTP, and httpx when a proxy is set.
Nothing leaves 127.0.0.1; every loop is bounded in count and every test in time."""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from helpers.openai_server import FakeOpenAI, Fault, Reply, status, text
from helpers.sleeps import Sleeps

from machine.clients.chat import ChatCompletionsHarness, Endpoint, ModelRouter
from machine.clients.chat._client import ChatClient, ModelCallError
from machine.clients.chat._http import HttpPool, Url
from machine.clients.chat._http_proxied import Proxied, proxy_for
from machine.clients.chat._http_stream import ChunkedDecoder, Decoded, HttpError, ReplyTooLarge
from machine.clients.chat._sse import SSEParser
from machine.errors import HarnessError
from machine.ops._compose import model_access

LIMIT_S = 10.0
CALLS = 12
MESSAGES = [{"role": "user", "content": "hi"}]
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests choose the proxy settings: none, unless a test sets one."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def client(url: str, sleeps: Sleeps | None = None, **kw: Any) -> ChatClient:
    options: dict[str, Any] = {"timeout_s": 2.0, "max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05}
    options.update(kw)
    return ChatClient(Endpoint("openai", url, **options), sleep=sleeps or Sleeps(), jitter=lambda: 0.5)


async def call(chat: ChatClient, *, stream: bool = False) -> Any:
    pieces: list[str] = []
    with anyio.fail_after(LIMIT_S):
        turn = await chat.complete("m", MESSAGES, on_text=pieces.append if stream else None)
    return turn


async def call_once(server: FakeOpenAI) -> Any:
    """One call from a client of its own, closed after."""
    chat = client(server.url + "/v1")
    try:
        return await call(chat)
    finally:
        await chat.aclose()


def pool_of(chat: ChatClient) -> HttpPool:
    pool = chat.client
    assert isinstance(pool, HttpPool)
    return pool


# --- the pool ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_calls_one_after_another_share_one_connection(server: FakeOpenAI, stream: bool) -> None:
    server.default = text("hello there", chunk_chars=2)
    chat = client(server.url + "/v1")
    try:
        turns = [await call(chat, stream=stream) for _ in range(CALLS)]
        assert pool_of(chat).opened == 1 and pool_of(chat).idle == 1
    finally:
        await chat.aclose()
    assert {t.message.content for t in turns} == {"hello there"}
    assert server.opened == 1 and len(server.requests) == CALLS


async def test_calls_at_once_open_one_connection_each_then_reuse_them(server: FakeOpenAI) -> None:
    server.default = text("ok")
    server.latency_ms = 50
    chat = client(server.url + "/v1")
    try:
        for _ in range(3):
            async with anyio.create_task_group() as tasks:
                for _ in range(4):
                    tasks.start_soon(call, chat)
        assert pool_of(chat).opened == 4 and pool_of(chat).idle == 4
    finally:
        await chat.aclose()
    assert server.opened == 4 and len(server.requests) == 12


async def test_a_connection_the_server_closed_while_idle_is_replaced(server: FakeOpenAI) -> None:
    server.default = text("ok")
    chat = client(server.url + "/v1")
    try:
        await call(chat)
        assert server.drop_connections() == 1
        await anyio.sleep(0.05)
        turn = await call(chat)
        assert turn.message.content == "ok" and turn.retries == []  # never a failed call
        assert server.opened == 2 and pool_of(chat).opened == 2
    finally:
        await chat.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_pooled_connection_found_dead_on_sending_is_retried_once(
    server: FakeOpenAI, stream: bool
) -> None:
    server.push(text("first"), Fault("close"), text("second"))
    sleeps = Sleeps()
    chat = client(server.url + "/v1", sleeps)
    try:
        await call(chat, stream=stream)
        turn = await call(chat, stream=stream)
    finally:
        await chat.aclose()
    assert turn.message.content == "second" and turn.retries == [] and sleeps.waits == []
    assert [r.played for r in server.requests] == ["reply", "fault:close", "reply"]
    assert server.opened == 2


async def test_a_new_connection_closed_with_no_reply_is_a_network_error(server: FakeOpenAI) -> None:
    server.push(Fault("close"), Fault("close"), text("ok"))
    turn = await call_once(server)
    assert turn.message.content == "ok"
    port = server.url.rsplit(":", 1)[1]
    assert [r["error"] for r in turn.retries] == [
        f"network error: 127.0.0.1:{port} closed the connection without replying "
        "(ConnectionResetError: the connection closed before the reply)"
    ] * 2


async def test_a_chunked_reply_is_read_whole(server: FakeOpenAI) -> None:
    server.push(Reply(content="chunked " * 40, reasoning="thought", chunked=True, chunk_chars=7))
    chat = client(server.url + "/v1")
    try:
        turn = await call(chat)
        assert pool_of(chat).idle == 1  # read to its last chunk: the connection is kept
    finally:
        await chat.aclose()
    assert turn.message.content == "chunked " * 40 and turn.message.reasoning == "thought"


async def test_a_timeout_closes_the_connection_and_the_next_call_opens_another(server: FakeOpenAI) -> None:
    server.push(Fault("hang", seconds=3.0), text("late"))
    chat = client(server.url + "/v1", timeout_s=0.3, max_attempts=1)
    started = time.perf_counter()
    try:
        with pytest.raises(ModelCallError, match=r"no reply within 0.3 s"):
            await call(chat)
        assert time.perf_counter() - started < 2.0
        assert pool_of(chat).idle == 0  # a connection with a reply still owed is never reused
        assert (await call(chat)).message.content == "late"
        assert pool_of(chat).opened == 2
    finally:
        await chat.aclose()


async def test_a_reply_over_the_limit_is_refused_without_reading_it(server: FakeOpenAI) -> None:
    server.push(Fault("oversized"))
    chat = client(server.url + "/v1")
    try:
        with pytest.raises(ModelCallError, match="could not be parsed: the reply is 1099511627776 bytes"):
            await call(chat)
    finally:
        await chat.aclose()
    assert len(server.requests) == 1  # not asked again


async def test_a_chunked_body_over_the_limit_is_refused(server: FakeOpenAI) -> None:
    server.push(Reply(content="x" * 5000, chunked=True, chunk_chars=100))
    pool = HttpPool(max_body=1000)
    url = Url.parse(server.url + "/v1/chat/completions")
    try:
        with anyio.fail_after(LIMIT_S):
            reply = await pool.post(url, {}, b'{"model": "m", "messages": []}')
            try:
                with pytest.raises(ReplyTooLarge, match="over the 1000 bytes a reply may be"):
                    await reply.read()
            finally:
                await reply.aclose()
        assert pool.idle == 0
    finally:
        await pool.aclose()


async def test_a_reply_that_is_not_http_is_a_network_error_that_says_so(server: FakeOpenAI) -> None:
    server.push(Fault("garbled", message="SSH-2.0-OpenSSH_9.6"), text("ok"))
    turn = await call_once(server)
    assert turn.message.content == "ok"
    assert (
        turn.retries[0]["error"]
        == "network error: the reply is not HTTP/1.1: it begins 'SSH-2.0-OpenSSH_9.6'"
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_429_with_retry_after_and_a_5xx_on_kept_connections(server: FakeOpenAI, stream: bool) -> None:
    server.push(status(429, "slow down", retry_after=2), status(502), text("ok"))
    sleeps = Sleeps()
    chat = client(server.url + "/v1", sleeps, max_backoff_s=5.0)
    try:
        turn = await call(chat, stream=stream)
    finally:
        await chat.aclose()
    assert turn.message.content == "ok"
    assert [r["error"] for r in turn.retries] == [
        "429 rate limited: slow down",
        "502 server error: fake 502: Bad Gateway",
    ]
    assert sleeps.waits[0] == 2.0 and server.opened == 1  # error replies leave the connection usable


# --- a peer the stand-in cannot play: a loopback socket that answers what a test writes ----------


@contextlib.asynccontextmanager
async def raw_server(answer: bytes) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    peer = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{peer.sockets[0].getsockname()[1]}"
    finally:
        peer.close()


async def test_a_307_is_followed_with_the_same_body(server: FakeOpenAI) -> None:
    server.push(text("moved here"))
    moved = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {server.url}/v1/chat/completions\r\n"
    async with raw_server((moved + "Content-Length: 0\r\n\r\n").encode()) as url:
        chat = client(url + "/v1")
        try:
            turn = await call(chat)
        finally:
            await chat.aclose()
    assert turn.message.content == "moved here"
    (seen,) = server.requests
    assert seen.messages == MESSAGES and "authorization" not in seen.headers  # not sent to another host


async def test_a_gzipped_reply_is_read() -> None:
    body = zlib.compress(b'{"choices": [{"message": {"content": "zipped"}}]}', wbits=31)
    head = (
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    async with raw_server(head.encode() + body) as url:
        chat = client(url + "/v1", max_attempts=1)
        try:
            turn = await call(chat)
        finally:
            await chat.aclose()
    assert turn.message.content == "zipped"


async def test_bytes_that_are_not_http_then_a_close_are_a_network_error() -> None:
    async with raw_server(b"\x15\x03\x01\x00\x02\x02\x50") as url:  # a TLS alert: https spoken to as http
        chat = client(url + "/v1", max_attempts=1)
        try:
            with pytest.raises(
                ModelCallError, match=r"network error: the reply is not HTTP: it begins b'\\x15"
            ):
                await call(chat)
        finally:
            await chat.aclose()


async def test_a_reply_cut_short_of_its_length_is_a_network_error() -> None:
    head = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"choices": '
    async with raw_server(head) as url:
        chat = client(url + "/v1", max_attempts=1)
        try:
            with pytest.raises(ModelCallError, match="network error: the connection closed with 88 bytes"):
                await call(chat)
        finally:
            await chat.aclose()


# --- framing, events and settings, without a connection ------------------------------------------


def test_chunked_framing_is_undone_whatever_the_pieces() -> None:
    wire = b"4;ext=1\r\nWiki\r\n6\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\n"
    for size in (1, 2, 5, len(wire)):
        decoder = ChunkedDecoder()
        out = b"".join(decoder.feed(wire[i : i + size]) for i in range(0, len(wire), size))
        assert out == b"Wikipedia in \r\n\r\nchunks." and decoder.done
    with pytest.raises(HttpError, match="chunk framing is garbled"):
        ChunkedDecoder().feed(b"zz\r\n")
    with pytest.raises(HttpError, match="does not end where its size says"):
        ChunkedDecoder().feed(b"2\r\nabc\r\n")


def test_events_are_parsed_whatever_the_pieces() -> None:
    stream = (
        b': comment\r\ndata: {"a": 1}\r\n\r\nevent: x\ndata:two\ndata: lines\n\ndata: [DONE]\n\ndata: last'
    )
    for size in (1, 3, len(stream)):
        parser = SSEParser()
        events = [e for i in range(0, len(stream), size) for e in parser.feed(stream[i : i + size])]
        assert [*events, *parser.close()] == [b'{"a": 1}', b"two\nlines", b"[DONE]", b"last"]


def test_a_gzip_bomb_is_stopped_at_the_limit() -> None:
    bomb = zlib.compress(b"\0" * 100_000, wbits=31)
    with pytest.raises(ReplyTooLarge):
        Decoded("gzip", limit=10_000)(bomb)
    with pytest.raises(ValueError, match="encoded as 'br'"):
        Decoded("br")


async def test_a_header_with_a_line_break_or_a_url_that_is_not_http_is_refused() -> None:
    bad = ChatClient(Endpoint("openai", "http://127.0.0.1:9/v1", headers={"X-Title": "a\r\nInjected: 1"}))
    with pytest.raises(HarnessError, match="X-Title header for openai holds a line break"):
        await bad.complete("m", MESSAGES)
    nowhere = ChatClient(Endpoint("openai", "127.0.0.1:11434/v1"))
    with pytest.raises(HarnessError, match=r"'127.0.0.1:11434/v1', is not an http:// or https:// URL"):
        await nowhere.complete("m", MESSAGES)


# --- proxies: httpx, as before -------------------------------------------------------------------


async def test_a_proxy_in_the_environment_sends_the_calls_through_httpx(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in plays the proxy: the request for a host that does not exist reaches it, absolute-form,
    and nothing is resolved or sent anywhere else."""
    monkeypatch.setenv("HTTP_PROXY", server.url)
    server.push(text("via the proxy"), text("streamed via the proxy", chunk_chars=4))
    chat = client("http://model.invalid/v1")
    try:
        assert isinstance(chat.client, Proxied)
        plain = await call(chat)
        streamed = await call(chat, stream=True)
    finally:
        await chat.aclose()
    assert (plain.message.content, streamed.message.content) == ("via the proxy", "streamed via the proxy")
    assert [r.path for r in server.requests] == ["http://model.invalid/v1/chat/completions"] * 2


async def test_no_proxy_keeps_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    url = Url.parse("http://127.0.0.1:8000/v1/chat/completions")
    assert proxy_for(url) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert proxy_for(url) is None  # an https proxy is not one for http
    assert proxy_for(Url.parse("https://openrouter.ai/api/v1")) == "http://127.0.0.1:3128"
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:3128")
    assert proxy_for(url) == "http://127.0.0.1:3128"
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert proxy_for(url) is None
    assert isinstance(ChatClient(Endpoint("openai", "http://127.0.0.1:8000/v1")).client, HttpPool)


# --- one pool for a suite's runs and judges ------------------------------------------------------


async def test_the_judges_share_the_harness_client(server: FakeOpenAI) -> None:
    server.default = text("ok")
    chat = client(server.url + "/v1")
    harness = ChatCompletionsHarness(chat.endpoint, client=chat)
    router = model_access(harness)
    assert isinstance(router, ModelRouter) and router.client_for("some/judge") is chat
    assert ModelRouter(client=chat).client_for("some/judge") is chat
    try:
        with anyio.fail_after(LIMIT_S):
            for _ in range(3):
                await harness.client.complete("m", MESSAGES)
                await router.complete("some/judge", MESSAGES)
    finally:
        await router.aclose()
        await harness.aclose()  # closing a shared client twice is harmless
    assert server.opened == 1 and len(server.requests) == 6
