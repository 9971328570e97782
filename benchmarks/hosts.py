"""The opencode and pi harnesses: what running the agent loop in another program costs per run.

Every harness runs the ``red`` machine against the same local OpenAI-compatible endpoint
(``tests/helpers/openai_server.py``, answering at once): a tool call to ``red_mentioned``, then a reply, so
each run is two model calls and one tool call. Runs are sequential, RUNS per harness after WARMUP
uncounted ones; the figure is the median wall time of ``Workspace.run`` (sandbox, run, store included).

- ``openai``: the in-process loop (our chat-completions client), the baseline.
- ``opencode``: one ``opencode serve`` for all runs (its start is timed apart: STARTS fresh harnesses,
  first run included minus a warm run), a session per run, the run's tools served over MCP.
- ``pi``: one ``pi --mode json`` process per run, the run's tools through the generated extension.

The overhead is the median minus the baseline's. No targets are set; the figures are for the record.
Loopback only. The binaries come from ``.venv/npm`` (``make hosts``).

    .venv/bin/python benchmarks/hosts.py            # 20 runs each
    .venv/bin/python benchmarks/hosts.py --quick    # 5 runs each
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"

from helpers.openai_server import FakeOpenAI, Item, Recorded, text, tool_call  # noqa: E402

from machine import open_workspace  # noqa: E402
from machine.clients.chat import ChatCompletionsHarness, Endpoint  # noqa: E402

WARMUP = 2
STARTS = 3


def red_model(prefix: str) -> Callable[[Recorded], Item]:
    def answer(request: Recorded) -> Item:
        if request.body["messages"][-1]["role"] == "tool":
            return text("Flagged.", prompt_tokens=40, completion_tokens=2)
        return tool_call(f"{prefix}red_mentioned", {}, prompt_tokens=30, completion_tokens=3)

    return answer


def harness(name: str, url: str) -> Any:
    if name == "openai":
        return ChatCompletionsHarness(Endpoint("openai", url), stream=False)
    if name == "opencode":
        from machine.clients.hosts.opencode import OpencodeHarness

        return OpencodeHarness(binary=NPM_BIN / "opencode", base_url=url)
    from machine.clients.hosts.pi import PiHarness

    return PiHarness(binary=NPM_BIN / "pi", base_url=url)


async def time_runs(name: str, root: Path, runs: int) -> list[float]:
    prefix = "machine_" if name == "opencode" else ""
    with FakeOpenAI(responder=red_model(prefix)) as fake:
        h = harness(name, fake.url + "/v1")
        ws = open_workspace(root, harness=h)
        times: list[float] = []
        try:
            for i in range(WARMUP + runs):
                start = time.perf_counter()
                run = await ws.run("red", "red")
                elapsed = time.perf_counter() - start
                if run.status != "ok" or run.tool_results[0].content != "noted: red was mentioned":
                    raise SystemExit(f"{name}: the run went wrong: {run.error or run.trajectory}")
                if i >= WARMUP:
                    times.append(elapsed)
        finally:
            await ws.aclose()
    return times


async def opencode_start(root: Path) -> list[float]:
    """A fresh harness's first run minus a warm run: the server's start as a command pays it."""
    starts = []
    with FakeOpenAI(responder=red_model("machine_")) as fake:
        for _ in range(STARTS):
            ws = open_workspace(root, harness=harness("opencode", fake.url + "/v1"))
            try:
                first = time.perf_counter()
                await ws.run("red", "red")
                cold = time.perf_counter() - first
                again = time.perf_counter()
                await ws.run("red", "red")
                warm = time.perf_counter() - again
            finally:
                await ws.aclose()
            starts.append(cold - warm)
    return starts


def ms(values: list[float]) -> str:
    low, mid, high = (v * 1000 for v in (min(values), statistics.median(values), max(values)))
    return f"{mid:.0f} ms (min {low:.0f}, max {high:.0f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 5 if args.quick else 20
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copytree(ROOT / "machines" / "red", root / "machines" / "red")
        base = await time_runs("openai", root, runs)
        print(f"openai (in-process loop): {ms(base)} a run")
        for name in ("opencode", "pi"):
            if not (NPM_BIN / name).exists():
                print(f"{name}: not installed in {NPM_BIN} (make hosts); skipped")
                continue
            times = await time_runs(name, root, runs)
            extra = (statistics.median(times) - statistics.median(base)) * 1000
            print(f"{name}: {ms(times)} a run, {extra:.0f} ms over the in-process loop")
        if (NPM_BIN / "opencode").exists():
            print(f"opencode serve start (first run minus a warm one): {ms(await opencode_start(root))}")


if __name__ == "__main__":
    anyio.run(main)
