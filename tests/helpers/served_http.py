"""``machine serve --http`` as a real process on a free loopback port, for the server tests: started over a
workspace folder with the environment a test gives, its URL read from what it prints, and stopped with
everything it logged returned."""

from __future__ import annotations

import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from helpers.env import MACHINE_BIN, clean_env
from helpers.server_workspace import Folder

TOKEN = "t" * 12 + "-a-test-token-of-forty-three-chars"


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    stderr_head: str


def start(folder: Folder, env: dict[str, str], script: Path | None = None) -> Served:
    """The server, once it has printed its URL (bounded: a few lines, then the URL)."""
    process = subprocess.Popen(
        [str(MACHINE_BIN), *folder.serve_args("--http", "--port", "0", script=script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
    )
    assert process.stderr is not None
    head: list[str] = []
    for _ in range(50):
        line = process.stderr.readline()
        if not line:
            break
        head.append(line)
        found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if found:
            return Served(process, found.group(1), "".join(head))
    process.kill()
    raise AssertionError("machine serve --http did not print its URL:\n" + "".join(head))


def stop(served: Served) -> str:
    """Stop the server; everything it wrote to stderr."""
    served.process.terminate()
    try:
        _out, err = served.process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        _out, err = served.process.communicate(timeout=15)
    return served.stderr_head + err


@asynccontextmanager
async def http_client(served: Served, **options: object) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP with the bearer token (``options`` go to ``Client``)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        transport = streamable_http_client(served.url, http_client=http)
        async with Client(transport, mode="legacy", **options) as client:  # type: ignore[arg-type]
            yield client
