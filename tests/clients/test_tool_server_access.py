"""Who the per-run tool server opens for, over real HTTP on 127.0.0.1: its own token exactly (every near
miss -- truncated, extended, one character changed, case changed, empty, another scheme -- gets 401 while
the token gets 200); a token is refused once revoked, and the server revokes it when its block ends; a token
below the minimum length cannot make a verifier; only requests that name the server by a loopback name
(Host) and come from a loopback page (Origin) are served. Loopback only; every wait is bounded."""

from __future__ import annotations

import base64
import json
import socket
import string
from urllib.parse import urlsplit

import anyio
import pytest

import machine.clients.tool_server as tool_server
from machine.clients.tool_server import (
    MIN_TOKEN_CHARS,
    RunTokenVerifier,
    ServedTools,
    new_token,
    serve_run_tools,
)
from machine.runs import ToolContext, tool

LIMIT = 30
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOKEN = "Ab0-_" * 9  # 45 characters with upper and lower case, digits and both URL-safe symbols


@tool
def echo(text: str) -> str:
    """Say it back.

    text: what to say."""
    return text


def _changed(token: str, index: int) -> str:
    """``token`` with the character at ``index`` replaced by another URL-safe one."""
    replacement = "A" if token[index] != "A" else "B"
    return token[:index] + replacement + token[index + 1 :]


def near_misses(token: str) -> dict[str, str]:
    """Authorization values that are almost this token, by what is wrong with them."""
    middle = len(token) // 2
    misses = {
        "empty": "",
        "scheme only": "Bearer",
        "scheme and space": "Bearer ",
        "no scheme": token,
        "basic scheme": f"Basic {token}",
        "token scheme": f"Token {token}",
        "colon instead of space": f"Bearer:{token}",
        "two spaces": f"Bearer  {token}",
        "truncated by one": f"Bearer {token[:-1]}",
        "first half": f"Bearer {token[:middle]}",
        "last half": f"Bearer {token[middle:]}",
        "first character": f"Bearer {token[0]}",
        "without its first character": f"Bearer {token[1:]}",
        "one more character": f"Bearer {token}x",
        "one character before": f"Bearer x{token}",
        "twice": f"Bearer {token}{token}",
        "first character changed": f"Bearer {_changed(token, 0)}",
        "middle character changed": f"Bearer {_changed(token, middle)}",
        "last character changed": f"Bearer {_changed(token, -1)}",
        "upper case": f"Bearer {token.upper()}",
        "lower case": f"Bearer {token.lower()}",
        "case swapped": f"Bearer {token.swapcase()}",
        "a comma and more": f"Bearer {token},x",
    }
    return misses


def _post(served: ServedTools, authorization: str | None, host: str = "", origin: str = "") -> int:
    """The status of an ``initialize`` POST carrying exactly ``authorization`` (sent as raw bytes, since an
    HTTP client tidies a header such as ``Bearer `` before sending it), ``host`` and ``origin``."""
    url = urlsplit(served.url)
    body = json.dumps(INIT).encode()
    lines = [f"POST {url.path} HTTP/1.1", f"Host: {host or url.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in ACCEPT.items()] + [f"Content-Length: {len(body)}"]
    if authorization is not None:
        lines.append(f"Authorization: {authorization}")
    if origin:
        lines.append(f"Origin: {origin}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    with socket.create_connection((url.hostname, url.port), timeout=10) as connection:
        connection.sendall(request)
        head = b""
        for _ in range(64):  # the status line, however the reply is split
            chunk = connection.recv(256)
            head += chunk
            if b"\r\n" in head or not chunk:
                break
    return int(head.split(b" ", 2)[1])


def _statuses(served: ServedTools, values: dict[str, str | None]) -> dict[str, int]:
    return {name: _post(served, value) for name, value in values.items()}


async def test_every_near_miss_of_the_token_is_refused_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_server, "new_token", lambda: TOKEN)
    misses: dict[str, str | None] = {"no header": None, **near_misses(TOKEN)}
    accepted: dict[str, str | None] = {
        "exact": f"Bearer {TOKEN}",
        # the scheme is case-insensitive (RFC 7235), the token is not
        "scheme in lower case": f"bearer {TOKEN}",
        "scheme in upper case": f"BEARER {TOKEN}",
    }
    with anyio.fail_after(LIMIT):
        async with serve_run_tools([echo], ToolContext(run_id="run-tokens")) as served:
            assert served.token == TOKEN
            refused = await anyio.to_thread.run_sync(_statuses, served, misses)
            opened = await anyio.to_thread.run_sync(_statuses, served, accepted)
    assert refused == dict.fromkeys(misses, 401)
    assert opened == dict.fromkeys(accepted, 200)


async def test_a_real_token_is_refused_by_a_server_of_another_run() -> None:
    with anyio.fail_after(LIMIT):
        async with (
            serve_run_tools([echo], ToolContext(run_id="run-one")) as one,
            serve_run_tools([echo], ToolContext(run_id="run-two")) as two,
        ):
            crossed = await anyio.to_thread.run_sync(
                _statuses, one, {"two's": f"Bearer {two.token}", "one's": f"Bearer {one.token}"}
            )
    assert crossed == {"two's": 401, "one's": 200}


async def test_a_revoked_token_is_refused_over_http_and_the_block_revokes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[RunTokenVerifier] = []

    class Recorded(RunTokenVerifier):
        def __init__(self, token: str, run_id: str) -> None:
            super().__init__(token, run_id)
            made.append(self)

    monkeypatch.setattr(tool_server, "RunTokenVerifier", Recorded)
    with anyio.fail_after(LIMIT):
        async with serve_run_tools([echo], ToolContext(run_id="run-revoked")) as served:
            before = await anyio.to_thread.run_sync(_post, served, f"Bearer {served.token}")
            made[0].revoke()
            after = await anyio.to_thread.run_sync(_post, served, f"Bearer {served.token}")
        async with serve_run_tools([echo], ToolContext(run_id="run-ended")) as ended:
            assert await made[1].verify_token(ended.token) is not None
    assert (before, after) == (200, 401)
    assert await made[1].verify_token(ended.token) is None  # the block's end revoked it
    assert await made[1].verify_token("") is None


async def test_the_verifier_accepts_exactly_its_token_until_revoked() -> None:
    verifier = RunTokenVerifier(TOKEN, "run-v")
    granted = await verifier.verify_token(TOKEN)
    assert granted is not None
    assert granted.scopes == [tool_server.SCOPE]
    assert granted.client_id == "run:run-v" and granted.token == "run:run-v"  # a label, never the secret
    for name, value in near_misses(TOKEN).items():
        if value.startswith(("Bearer ", "bearer ")):
            assert await verifier.verify_token(value[7:]) is None, name
    assert await verifier.verify_token(TOKEN + "\x00") is None
    assert await verifier.verify_token("é" * len(TOKEN)) is None
    verifier.revoke()
    assert await verifier.verify_token(TOKEN) is None
    assert await verifier.verify_token("") is None
    assert TOKEN not in repr(verifier) and "run-v" in repr(verifier)


@pytest.mark.parametrize("length", [0, 1, 16, 32, MIN_TOKEN_CHARS - 1])
def test_a_token_below_the_minimum_length_cannot_make_a_verifier(length: int) -> None:
    with pytest.raises(ValueError) as refused:
        RunTokenVerifier("x" * length, "run-short")
    assert str(refused.value) == (
        f"a run's bearer token needs at least {MIN_TOKEN_CHARS} characters, got {length}: "
        "make it with new_token()"
    )


async def test_a_token_at_the_minimum_length_makes_a_verifier() -> None:
    token = "y" * MIN_TOKEN_CHARS
    assert await RunTokenVerifier(token, "run-min").verify_token(token) is not None


def test_new_tokens_are_32_random_url_safe_bytes_each_time() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    alphabet = set(string.ascii_letters + string.digits + "-_")
    for token in list(tokens)[:20]:
        assert len(token) == MIN_TOKEN_CHARS and set(token) <= alphabet
        assert len(base64.urlsafe_b64decode(token + "=")) == 32
    RunTokenVerifier(next(iter(tokens)), "run-new")  # what the server mints always makes a verifier


def test_the_served_headers_carry_the_token_as_a_bearer() -> None:
    served = ServedTools(url="http://127.0.0.1:1/mcp", token=TOKEN, run_id="r")
    assert served.headers == {"Authorization": f"Bearer {TOKEN}"}
    assert TOKEN not in repr(served)


def _named(served: ServedTools) -> dict[str, int]:
    port = urlsplit(served.url).port
    bearer = f"Bearer {served.token}"
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "127.0.0.1", "localhost", "[::1]"]
    foreign_hosts = [
        f"evil.example:{port}",
        "evil.example",
        f"127.0.0.1.evil.example:{port}",
        f"localhost.evil.example:{port}",
        f"127.0.0.2:{port}",
        f"0.0.0.0:{port}",
    ]
    origins = [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"]
    foreign_origins = [
        "http://evil.example",
        f"http://evil.example:{port}",
        f"http://localhost.evil.example:{port}",
        f"https://127.0.0.1:{port}",
        "http://127.0.0.1",
        "null",
    ]
    found = {f"host {h}": _post(served, bearer, host=h) for h in [*hosts, *foreign_hosts]}
    found |= {f"origin {o}": _post(served, bearer, origin=o) for o in [*origins, *foreign_origins]}
    expected = {f"host {h}": 200 for h in hosts} | {f"host {h}": 421 for h in foreign_hosts}
    expected |= {f"origin {o}": 200 for o in origins} | {f"origin {o}": 403 for o in foreign_origins}
    return {name: found[name] for name in found if found[name] != expected[name]}


async def test_only_loopback_names_and_loopback_pages_are_served() -> None:
    """DNS rebinding: a page on evil.example that resolves its name to 127.0.0.1 sends its own Host and
    Origin; neither is one of the server's loopback names, so neither is served even with the token."""
    with anyio.fail_after(LIMIT):
        async with serve_run_tools([echo], ToolContext(run_id="run-names")) as served:
            wrong = await anyio.to_thread.run_sync(_named, served)
    assert wrong == {}
