"""A per-run tool server (``machine.clients.tool_server.serve_run_tools``): how fast it starts and stops, and
what a tool call through it costs over calling the tool directly. Loopback only (127.0.0.1).

- **Start**: entering ``serve_run_tools([echo], ctx)`` until it yields ``served`` (uvicorn bound to a free
  port, ready for requests), STARTS times after one uncounted start (the first pays the imports, printed
  apart); median, min and max. Target: at most 150 ms. For reference, the first ``initialize`` POST
  after the start (bearer header, raw httpx) and the stop (leaving the block: the token revoked, the
  server shut down, its port closed).
- **Tool call**: ``await client.call_tool("echo", {"text": "hi"})`` through the SDK's ``Client`` over
  streamable HTTP (an ``httpx2.AsyncClient`` carrying the bearer header, as the tests connect), CALLS times
  after 20 warm-ups, against ``await echo.invoke({"text": "hi"}, ctx)`` directly, CALLS times. Our
  overhead is the difference of the medians. Target: at most 10 ms. For reference, the same call as a raw
  JSON-RPC POST (httpx, one keep-alive connection), which leaves out the SDK client's own cost.

Prints figures and asserts nothing (a wrong answer stops the script, so a failing call cannot look fast).

    .venv/bin/python benchmarks/run_tools.py            # 20 starts, 200 calls
    .venv/bin/python benchmarks/run_tools.py --quick    # 5 starts, 50 calls
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from machine.clients.tool_server import ServedTools, serve_run_tools
from machine.runs import ToolContext, tool

TARGET_START_MS = 150.0
TARGET_OVERHEAD_MS = 10.0
LIMIT_S = 30.0
WARMUP = 20
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


@tool
def echo(text: str) -> str:
    """Answer with the text.

    text: what to answer."""
    return text


def ms(seconds: list[float]) -> tuple[float, float, float]:
    return statistics.median(seconds) * 1000, min(seconds) * 1000, max(seconds) * 1000


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a plain JSON or an SSE response."""
    response.raise_for_status()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message: dict[str, Any] = json.loads(line[5:])
                if "id" in message:
                    return message
        raise RuntimeError("no answer in the event stream")
    answer: dict[str, Any] = response.json()
    return answer


async def initialize(
    http: httpx.AsyncClient, served: ServedTools, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Open a session with raw POSTs; the headers later requests need."""
    headers = {**ACCEPT, **served.headers, **(extra or {})}
    response = await http.post(served.url, json=INIT, headers=headers)
    assert "result" in answer_of(response), response.text
    session = response.headers.get("mcp-session-id")
    if session:
        headers["mcp-session-id"] = session
    version = answer_of(response)["result"].get("protocolVersion")
    if version:
        headers["mcp-protocol-version"] = version
    done = await http.post(
        served.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert done.status_code in (200, 202), done.status_code
    return headers


async def starts(ctx: ToolContext, count: int) -> None:
    first: list[float] = []
    start, init, stop = [], [], []
    # One client for all starts, built outside the timing (building one loads an SSL context, ~20 ms).
    # Each server has its own port, so each first POST opens a fresh connection; "Connection: close" ends it
    # with the answer, so the stop does not wait on it.
    async with httpx.AsyncClient(timeout=LIMIT_S) as http:
        for i in range(count + 1):
            began = time.perf_counter()
            async with serve_run_tools([echo], ctx) as served:
                ready = time.perf_counter()
                await initialize(http, served, {"Connection": "close"})
                initialized = time.perf_counter()
                leaving = time.perf_counter()
            stopped = time.perf_counter()
            if i == 0:
                first = [ready - began, initialized - ready, stopped - leaving]
                continue
            start.append(ready - began)
            init.append(initialized - ready)
            stop.append(stopped - leaving)

    print(f"per-run tool server: start to ready (median of {count}, after one uncounted first start)")
    median, low, high = ms(start)
    print(f"  start            {median:7.1f} ms  (min {low:.1f}, max {high:.1f})")
    print(f"  target <= {TARGET_START_MS:.0f} ms: {verdict(median, TARGET_START_MS)}")
    median, low, high = ms(init)
    print(f"  first initialize {median:7.1f} ms  (min {low:.1f}, max {high:.1f})  reference, raw POSTs")
    median, low, high = ms(stop)
    print(f"  stop             {median:7.1f} ms  (min {low:.1f}, max {high:.1f})  reference, port closed")
    print(
        f"  first start of the process (imports included): start {first[0] * 1000:.1f} ms,"
        f" first initialize {first[1] * 1000:.1f} ms, stop {first[2] * 1000:.1f} ms"
    )


async def calls(ctx: ToolContext, count: int) -> None:
    arguments = {"text": "hi"}
    direct = []
    for _ in range(WARMUP):
        await echo.invoke(arguments, ctx)
    for _ in range(count):
        began = time.perf_counter()
        text = await echo.invoke(arguments, ctx)
        direct.append(time.perf_counter() - began)
        assert text == "hi", text

    through, raw = [], []
    async with serve_run_tools([echo], ctx) as served:
        async with (
            httpx2.AsyncClient(headers=served.headers, timeout=LIMIT_S) as http2,
            Client(streamable_http_client(served.url, http_client=http2), mode="legacy") as client,
        ):
            for _ in range(WARMUP):
                await client.call_tool("echo", arguments)
            for _ in range(count):
                began = time.perf_counter()
                result = await client.call_tool("echo", arguments)
                through.append(time.perf_counter() - began)
                assert not result.is_error and result.content[0].text == "hi", result

        async with httpx.AsyncClient(timeout=LIMIT_S) as http:
            headers = await initialize(http, served)
            request = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": arguments},
            }
            for i in range(WARMUP + count):
                request["id"] = i + 1
                began = time.perf_counter()
                answer = answer_of(await http.post(served.url, json=request, headers=headers))
                elapsed = time.perf_counter() - began
                assert answer["result"]["content"][0]["text"] == "hi", answer
                if i >= WARMUP:
                    raw.append(elapsed)

    direct_ms, through_ms, raw_ms = (statistics.median(t) * 1000 for t in (direct, through, raw))
    overhead = through_ms - direct_ms
    print(f"\none tool call (median of {count} each, after {WARMUP} warm-ups)")
    p95 = statistics.quantiles(through, n=20)[-1] * 1000
    print(f"  SDK Client over HTTP  {through_ms:8.3f} ms  (p95 {p95:.3f})")
    print(f"  raw JSON-RPC POST     {raw_ms:8.3f} ms  reference: no SDK client")
    print(f"  tool.invoke directly  {direct_ms:8.3f} ms")
    print(
        f"  our overhead          {overhead:8.3f} ms  (target <= {TARGET_OVERHEAD_MS:.0f} ms: "
        f"{verdict(overhead, TARGET_OVERHEAD_MS)})"
    )


async def run(start_count: int, call_count: int) -> None:
    ctx = ToolContext(run_id="bench")  # the echo tool needs no sandbox; the server never touches one
    async with asyncio.timeout(600):  # bounded, whatever happens
        await starts(ctx, start_count)
        await calls(ctx, call_count)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    start_count, call_count = (5, 50) if args.quick else (20, 200)
    asyncio.run(run(start_count, call_count))


if __name__ == "__main__":
    main()
