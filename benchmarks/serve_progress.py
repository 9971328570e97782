"""How soon a host hears of ``machine serve``'s work, over streamable HTTP on 127.0.0.1, with the SDK client.

- **Progress latency**: ``rehearse`` of red on a scripted model whose every run takes ``--delay`` seconds
  (so runs finish one by one); for each progress notification, the time it reached the client minus the
  time its run finished (the run's stored ``finished_at``, on the same clock). Target: <= 50 ms.
- **Cancel to stop**: a second ``rehearse`` whose runs take a minute but for two quick ones; the client
  stops waiting after the second notification (the SDK sends ``notifications/cancelled``), and the time
  to the server's settled line in the spending log is taken (what finished kept and charged, nothing
  else). Target: <= 2 s.

Prints figures and asserts nothing.

    .venv/bin/python benchmarks/serve_progress.py [--delay 0.2] [--cancels 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from machine.runs import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
MACHINE_BIN = Path(sys.executable).parent / "machine"
URL = re.compile(rb"(http://127\.0\.0\.1:\d+/mcp)")
TARGET_LATENCY_MS = 50.0
TARGET_CANCEL_S = 2.0


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2, help="seconds each run's one turn takes")
    parser.add_argument("--cancels", type=int, default=3, help="cancelled calls to time")
    return parser.parse_args()


def script(path: Path, quick: str, delay: float, slow: float) -> Path:
    turn = {"text": "No red in that message.", "usage": {"input_tokens": 1000}}
    rules = [
        {"match": quick, "turns": [{**turn, "delay": delay}]},
        {"match": "(?s).*", "turns": [{**turn, "delay": slow}]},
    ]
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


class Served:
    """``machine serve --http --port 0`` over ``root``, replaying ``script``."""

    def __init__(self, root: Path, script_path: Path) -> None:
        self.token = secrets.token_urlsafe(32)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MACHINE")}
        env |= {"MACHINE_SERVER_TOKEN": self.token, "MACHINE_ALLOW_SPEND_USD": "100"}
        argv = [str(MACHINE_BIN), "serve", "--http", "--port", "0", "--workspace", str(root)]
        argv += ["--harness", "scripted", "--script", str(script_path)]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env)  # fmt: skip
        assert self.process.stderr is not None
        found = None
        for _ in range(200):  # bounded: the server announces its URL on stderr once it listens
            line = self.process.stderr.readline()
            if not line or (found := URL.search(line)):
                break
        if found is None:
            self.close()
            raise SystemExit("machine serve did not announce its URL")
        self.url = found.group(1).decode()
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


async def rehearse(served: Served, on_progress: Any, stop_after: int | None = None) -> float:
    """One rehearse call; with ``stop_after``, the caller stops waiting after that many notifications.
    Returns when it stopped waiting (``time.monotonic``)."""
    headers = {"Authorization": f"Bearer {served.token}"}
    arrived = anyio.Event()
    count = 0

    async def seen(done: float, total: float | None, message: str | None) -> None:
        nonlocal count
        count += 1
        await on_progress(done, total, message)
        if stop_after is not None and count >= stop_after:
            arrived.set()

    async with httpx2.AsyncClient(headers=headers, timeout=300) as http:
        transport = streamable_http_client(served.url, http_client=http)
        client = Client(transport, mode="legacy")  # type: ignore[arg-type]
        async with client, anyio.create_task_group() as group:

            async def call() -> None:
                arguments = {"name": "red", "budget_usd": 5}
                await client.call_tool("rehearse", arguments, progress_callback=seen)
                arrived.set()

            group.start_soon(call)
            await arrived.wait()
            stopped_at = time.monotonic()
            group.cancel_scope.cancel()
    return stopped_at


def latencies(root: Path, delay: float) -> list[float]:
    served = Served(root, script(root / "even.json", "(?s).*", delay, delay))
    heard: list[tuple[float, str]] = []

    async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
        heard.append((time.time(), message or ""))

    try:
        anyio.run(rehearse, served, on_progress)
    finally:
        served.close()
    finished = {}
    for run in SQLiteStore(root / ".machine" / "store.db").iter_runs("red"):
        if run.timings.finished_at is not None:
            finished[f"case {run.case_id} trial {run.trial}"] = _epoch(run.timings.finished_at)
    shutil.rmtree(root / ".machine")
    return [1000 * (at - finished[m.split(":")[0]]) for at, m in heard if m.split(":")[0] in finished]


def _epoch(value: Any) -> float:
    return (
        value.timestamp() if isinstance(value, datetime) else datetime.fromisoformat(str(value)).timestamp()
    )


def cancel_to_stop(root: Path) -> float:
    served = Served(root, script(root / "slow.json", "favourite|bored", 0.0, 60.0))
    log = root / ".machine" / "spending.jsonl"

    async def on_progress(_done: float, _total: float | None, _message: str | None) -> None:
        return None

    try:
        stopped_at = anyio.run(rehearse, served, on_progress, 2)
        for _ in range(1000):  # bounded: 10 s
            if log.is_file() and log.read_text(encoding="utf-8").strip():
                return time.monotonic() - stopped_at
            time.sleep(0.01)
        return float("inf")
    finally:
        served.close()
        shutil.rmtree(root / ".machine", ignore_errors=True)


def main() -> None:
    args = options()
    with tempfile.TemporaryDirectory(prefix="machine-progress-") as scratch:
        root = Path(scratch)
        shutil.copytree(ROOT / "machines" / "red", root / "machines" / "red")
        ms = latencies(root, args.delay)
        verdict = "meets" if statistics.median(ms) <= TARGET_LATENCY_MS else "MISSES"
        print(
            f"progress latency over HTTP, {len(ms)} runs of {args.delay:g} s each (4 at a time): median "
            f"{statistics.median(ms):.1f} ms, max {max(ms):.1f} ms  (target <= {TARGET_LATENCY_MS:g} ms: "
            f"{verdict})"
        )
        stops = [cancel_to_stop(root) for _ in range(args.cancels)]
        verdict = "meets" if max(stops) <= TARGET_CANCEL_S else "MISSES"
        shown = ", ".join(f"{s:.2f}" for s in stops)
        print(f"cancel to stop over HTTP: {shown} s  (target <= {TARGET_CANCEL_S:g} s: {verdict})")


if __name__ == "__main__":
    main()
