"""``machine serve`` against a bare ``MCPServer`` with one tool, side by side in one run.

- **Cold start**: a fresh process to a completed ``initialize`` (request written, response read),
  for ``machine serve --workspace W`` and for ``python bare.py`` (an ``MCPServer`` with one tool,
  ``run("stdio")``), interleaved, RUNS times each; median of each and the ratio. Target: at most 1.10x.
- **Round trip**: ``tools/call recent_runs(name, limit=20)`` on a store of 100,000 runs (filled with
  ``put_many``) against the bare server's trivial tool, over one stdio session each, the two servers'
  calls taken in turn (a slow spell of the machine falls on both), CALLS calls each; median of each and
  the ratio. Target: at most 1.5x.
- **Round trip over HTTP**: the same two calls with ``machine serve --http --port 0`` (its bearer token
  from ``MACHINE_SERVER_TOKEN``, sent on every request) against the bare ``MCPServer``'s
  ``streamable_http_app`` under uvicorn (no auth), both on 127.0.0.1, in turn; median of each and the
  ratio. Target: at most 1.3x.

The client side is raw newline-delimited JSON-RPC over the pipes (over HTTP: raw JSON-RPC POSTs with
httpx on one keep-alive connection), so both servers pay the same, small client cost. The servers run
without ``PYTHONDONTWRITEBYTECODE``, as an installed command does (one start each first, not counted,
writes the bytecode). Prints figures and asserts nothing.

    .venv/bin/python benchmarks/serve.py            # 10 starts, 300 calls, 100,000 runs
    .venv/bin/python benchmarks/serve.py --quick    # 5 starts, 100 calls, 20,000 runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from store import START, make_run  # noqa: E402

from machine.runs import SQLiteStore  # noqa: E402

MACHINE_BIN = Path(sys.executable).parent / "machine"
TARGET_START = 1.10
TARGET_STDIO = 1.5
TARGET_HTTP = 1.3
SKIPPED_ENV = ("MACHINE", "PYTHONDONTWRITEBYTECODE")
"""The environment the servers do not get: the person's machine settings, and the bytecode switch."""
BARE_PY = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    return "pong"


server.run("stdio")
"""
BARE_HTTP_PY = """\
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    return "pong"


async def main() -> None:
    app = server.streamable_http_app(host="127.0.0.1")
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve)
        with anyio.fail_after(30):
            while not web.started:
                await anyio.sleep(0.01)
        port = web.servers[0].sockets[0].getsockname()[1]
        print(f"bare: MCP over streamable HTTP at http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)


anyio.run(main)
"""
URL = re.compile(rb"(http://127\.0\.0\.1:\d+/mcp)")
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


class Stdio:
    """One server process spoken to over its pipes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 1

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, wanted_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        for _ in range(10_000):  # bounded: skip notifications until the answer comes
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == wanted_id:
                return message
        raise RuntimeError("no answer")

    def initialize(self) -> dict[str, Any]:
        self.send(INIT)
        answer = self.receive(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        return self.receive(request_id)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class Http:
    """One server process listening on 127.0.0.1, spoken to with raw JSON-RPC POSTs."""

    def __init__(self, argv: list[str], env: dict[str, str], headers: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        assert self.process.stderr is not None
        found = None
        for _ in range(200):  # bounded: the server announces its URL on stderr once it listens
            line = self.process.stderr.readline()
            if not line:
                break
            found = URL.search(line)
            if found:
                break
        if found is None:
            self.process.kill()
            self.process.wait(timeout=10)
            raise RuntimeError(f"{argv[0]} did not announce its URL")
        self.url = found.group(1).decode()
        # Keep draining stderr, so a chatty server never blocks on a full pipe.
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        self.client = httpx.Client(timeout=30)
        self.headers = {**ACCEPT, **headers}
        self.next_id = 1

    def post(self, message: dict[str, Any]) -> httpx.Response:
        response = self.client.post(self.url, json=message, headers=self.headers)
        response.raise_for_status()
        return response

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            for line in response.text.splitlines():
                if line.startswith("data:"):
                    message: dict[str, Any] = json.loads(line[5:])
                    if "id" in message:
                        return message
            raise RuntimeError("no answer in the event stream")
        answer: dict[str, Any] = response.json()
        return answer

    def initialize(self) -> dict[str, Any]:
        response = self.post(INIT)
        answer = self.answer(response)
        if session := response.headers.get("mcp-session-id"):
            self.headers["mcp-session-id"] = session
        self.headers["mcp-protocol-version"] = answer["result"]["protocolVersion"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        return self.answer(self.post(request))

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def fill(workspace: Path, runs: int) -> None:
    """``runs`` stored runs of machine red (and as many of four others), written with put_many."""
    store = SQLiteStore(workspace / ".machine" / "store.db")
    rng = random.Random(7)
    names = ["red", "blue", "green", "amber", "slate"]
    batch = []
    for i in range(runs):
        batch.append(make_run(rng, names[i % len(names)], START + timedelta(seconds=i)))
        if len(batch) == 5_000:
            store.put_many(batch)
            batch.clear()
    store.put_many(batch)
    store.close()


def cold_start(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    server = Stdio(argv, env)
    answer = server.initialize()
    elapsed = time.perf_counter() - began
    assert "result" in answer, answer
    server.close()
    return elapsed


Server = Stdio | Http
Call = tuple[Server, str, dict[str, Any]]


def in_turn(pair: list[Call], calls: int) -> list[list[float]]:
    """Each server's call timed in turn, ``calls`` times each, after a few calls not counted (the first
    loads the machine and opens the store). The servers are closed at the end."""
    try:
        for server, tool, arguments in pair:
            server.initialize()
            for _ in range(10):
                answer = server.call(tool, arguments)
                assert not answer["result"].get("isError"), answer
        times: list[list[float]] = [[] for _ in pair]
        for _ in range(calls):
            for timed, (server, tool, arguments) in zip(times, pair, strict=True):
                began = time.perf_counter()
                server.call(tool, arguments)
                timed.append(time.perf_counter() - began)
        return times
    finally:
        for server, _, _ in pair:
            server.close()


def report(title: str, rows: list[tuple[str, list[float]]], target: float) -> None:
    """The medians of ours and of the bare server's, and their ratio against ``target``."""
    ours_ms, bare_ms = (statistics.median(times) * 1000 for _, times in rows)
    print(title)
    for label, times in rows:
        print(f"  {label:<36} {statistics.median(times) * 1000:8.2f} ms")
    ratio = ours_ms / bare_ms
    print(f"  ratio {ratio:.2f}x  (target <= {target}x: {'ok' if ratio <= target else 'OVER'})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    starts, calls, runs = (5, 100, 20_000) if args.quick else (10, 300, 100_000)

    scratch = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        workspace = scratch / "ws"
        shutil.copytree(
            ROOT / "machines" / "red",
            workspace / "machines" / "red",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        bare = scratch / "bare.py"
        bare.write_text(BARE_PY, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(SKIPPED_ENV)}
        ours = [str(MACHINE_BIN), "serve", "--workspace", str(workspace)]
        theirs = [sys.executable, str(bare)]

        cold_start(ours, env), cold_start(theirs, env)  # not counted: writes bytecode, warms the disk cache
        mine, base = [], []
        for _ in range(starts):
            mine.append(cold_start(ours, env))
            base.append(cold_start(theirs, env))
        report(
            f"cold start to initialize over stdio (median of {starts} each, interleaved)",
            [("machine serve", mine), ("bare MCPServer", base)],
            TARGET_START,
        )

        began = time.perf_counter()
        fill(workspace, runs)
        print(f"\nfilled the store with {runs:,} runs in {time.perf_counter() - began:.1f} s (put_many)")
        recent = {"name": "red", "limit": 20}
        pair: list[Call] = [(Stdio(ours, env), "recent_runs", recent), (Stdio(theirs, env), "ping", {})]
        mine, base = in_turn(pair, calls)
        report(
            f"tools/call round trip over stdio (median of {calls} calls each, in turn)",
            [(f"recent_runs(red, 20) on {runs:,} runs", mine), ("bare ping", base)],
            TARGET_STDIO,
        )

        bare_http = scratch / "bare_http.py"
        bare_http.write_text(BARE_HTTP_PY, encoding="utf-8")
        token = secrets.token_urlsafe(32)
        bearer = {"Authorization": f"Bearer {token}"}
        served = Http([*ours, "--http", "--port", "0"], {**env, "MACHINE_SERVER_TOKEN": token}, bearer)
        pair = [
            (served, "recent_runs", recent),
            (Http([sys.executable, str(bare_http)], env, {}), "ping", {}),
        ]
        mine, base = in_turn(pair, calls)
        report(
            f"tools/call round trip over HTTP on 127.0.0.1 (median of {calls} calls each, in turn)",
            [("recent_runs(red, 20), bearer", mine), ("bare ping, no auth", base)],
            TARGET_HTTP,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
