"""The chat-completions harness against a local OpenAI-compatible endpoint: our overhead per model call,
per streamed chunk, and the wall time of graded runs at concurrency. Prints each figure beside the one
measured before (the openai SDK's client, or ``--before FILE``), its target, and figure / target; asserts
nothing.

The endpoint is the fake server of the tests (``tests/helpers/openai_server.py``) on 127.0.0.1, run in a
process of its own (forked), as a real endpoint is: in this process its threads would compete with ours
for the GIL and the figures would count its time as ours. The same client code as against Tinker or
OpenRouter runs here; only the base URL differs. Nothing leaves the machine.

(a) Overhead per model call: N single-step runs (no tools), one after another, through
    ``ChatCompletionsHarness.run`` with no added latency: plain, streamed, and plain with 41 messages of
    history (20 tool calls with 2,000-character results) before the reply. For each call, the time on our
    side is the run's wall time minus the time the server spent on that request (recorded by the server
    from reading the request's headers to sending its last byte). Prints the median and p95.
    Target: median <= 0.5 ms. For reference, also through ``Workspace.run`` (the run priced, built and
    written to a SQLite store).
(b) Per streamed chunk: streamed replies of 300 pieces; this process's CPU time over those calls divided
    by the chunks received (the server's time is in its own process, so none of it is counted).
    Target: <= 20 us a chunk.
(c) Graded runs: R cases of a machine with one ``judge()`` criterion, ``run_suite(..., concurrency=C)``
    with every call taking L ms at the endpoint; the run and its judge go to the same endpoint (the
    judge through the workspace's own model access, which shares the harness's client). Expected wall =
    L x (calls per run) x R / C, with the calls counted at the server; the wall is timed from the suite's
    start (connections are opened inside it), after a warm-up case in a workspace and endpoint of its own
    (what a process builds once is not the suite's). Target: wall / expected <= 1.10.

    .venv/bin/python benchmarks/harness.py [--quick] [--calls 300] [--runs 200] [--latency-ms 50]
                                           [--concurrency 8] [--json OUT] [--before FILE]
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import anyio

from machine import (
    Budget,
    Case,
    HarnessRequest,
    Machine,
    Message,
    Run,
    ToolCall,
    ToolContext,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    judge,
    open_workspace,
    run_suite,
)
from machine.clients.chat import ChatCompletionsHarness, Endpoint

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from helpers.openai_server import FakeOpenAI, Item, Recorded, text  # noqa: E402

TARGET_OVERHEAD_MS = 0.5
TARGET_CHUNK_US = 20.0
TARGET_RATIO = 1.10
BEFORE = {
    "plain": 1.963,
    "streamed": 3.42,
    "history": 1.985,
    "stored": 2.159,
    "chunk": 151.468,
    "ratio": 1.244,
}
"""The figures of the openai SDK's client, the path the harness had before its own: this benchmark (300
calls, 200 runs) on the code before the change, on the machine where the figures above were measured."""
FIGURES: dict[str, float] = {}
CPU_MS = [0.0]
"""This process's CPU time per call in the last ``timed`` series, ms: a check on wall minus server time,
which counts nothing of ours that overlaps the server's (sending a long request while it reads)."""
MODEL = "Qwen/Qwen3.6-35B-A3B"
JUDGE_MODEL = "thinkingmachines/Inkling-Small"
VERDICT = json.dumps({"criteria": {"helpful": {"reason": "It answers.", "score": 1}}})


@dataclass(frozen=True)
class Seen:
    """What the server process recorded of one request."""

    model: str | None
    server_s: float
    played: str


def _serve(conn: Connection, options: dict[str, Any]) -> None:
    with FakeOpenAI(**options) as server:
        conn.send(server.url)
        conn.recv()  # until the benchmark is done
        conn.send([Seen((r.body or {}).get("model"), r.server_s, r.played) for r in server.requests])


class EndpointProcess:
    """The fake endpoint in a forked process; ``requests`` holds what it saw once it has stopped."""

    def __init__(self, **options: Any) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, options), daemon=True)
        self.url = ""
        self.requests: list[Seen] = []

    def __enter__(self) -> EndpointProcess:
        self._process.start()
        self.url = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self.requests = self._conn.recv()
        self._process.join(timeout=5)


def endpoint(url: str) -> Endpoint:
    return Endpoint("openai", url + "/v1", timeout_s=30.0, max_attempts=2, backoff_s=0.05)


def request(i: int, streamed: bool, history: list[Message] | None = None) -> HarnessRequest:
    return HarnessRequest(
        run_id=f"r{i}",
        machine="bench",
        instructions="Answer briefly.",
        input=f"question {i}",
        model=MODEL,
        tools=[],
        tool_context=ToolContext(run_id=f"r{i}"),
        budget=Budget(None),
        history=list(history or []),
        max_steps=1,
        on_event=(lambda event: None) if streamed else None,
    )


def machine(with_judge: bool = True) -> Machine:
    rubric = define_rubric({"helpful": {"description": "The answer addresses the question.", "weight": 1}})
    grader = judge(model=JUDGE_MODEL, effort="medium") if with_judge else check("answered", bool_output)
    return define_machine(
        name="bench",
        intent="Answer questions, for the harness benchmark.",
        instructions="Answer briefly.",
        model=MODEL,
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"helpful": grader}),
    )


def bool_output(run: Run) -> bool:
    return bool(run.output)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Caller(Protocol):
    """One timed call (``i`` < 0 for the warm-up), and the connections to close after the last."""

    async def __call__(self, i: int) -> object: ...
    async def close(self) -> None: ...


async def timed(calls: int, one: Caller) -> list[float]:
    """Wall seconds of each call, after 20 that warm up (imports, connections) and are not counted."""
    for i in range(20):
        await one(-1 - i)
    walls: list[float] = []
    cpu = time.process_time()
    for i in range(calls):
        started = time.perf_counter()
        await one(i)
        walls.append(time.perf_counter() - started)
    CPU_MS[0] = (time.process_time() - cpu) / calls * 1000
    return walls


def overhead(walls: list[float], seen: list[Seen]) -> tuple[list[float], list[float]]:
    """Per call, ms: (ours = wall - the server's time, the server's time). One request per call."""
    counted = seen[-len(walls) :]
    if len(seen) != len(walls) + 20 or any(s.played != "reply" for s in counted):
        sys.exit(f"error: {len(walls)} calls made {len(seen) - 20} requests; expected one reply each")
    theirs = [s.server_s * 1000 for s in counted]
    return [w * 1000 - t for w, t in zip(walls, theirs, strict=True)], theirs


def show(key: str, label: str, value: float, unit: str, target: float | None, extra: str = "") -> None:
    """One figure: before, now, target and now / target."""
    FIGURES[key] = value
    before = BEFORE.get(key)
    was = f"{before:9.3f}" if before is not None else " " * 9
    goal = (
        f"<= {target:g} {unit:<3} {value / target:5.2f}x {'met' if value <= target else 'MISSED'}"
        if target is not None
        else "(reference)"
    )
    print(f"  {label:<40} {was} {value:9.3f} {unit:<3} {goal}{extra}")


def header() -> None:
    print(f"  {'':<40} {'before':>9} {'now':>9}     target   now/target")


def report_overhead(key: str, label: str, ours: list[float], theirs: list[float], target: bool) -> None:
    extra = (
        f"   p95 {percentile(ours, 95):.3f} ms, server median {statistics.median(theirs):.3f} ms,"
        f" our CPU {CPU_MS[0]:.3f} ms a call"
    )
    show(key, label, statistics.median(ours), "ms", TARGET_OVERHEAD_MS if target else None, extra)


ANSWER = text("The answer is 42.", prompt_tokens=40, completion_tokens=6)


async def measure(
    calls: int, make: Callable[[str], Caller], reply: Item = ANSWER
) -> tuple[list[float], list[Seen]]:
    """``calls`` timed calls against a fresh endpoint process that always gives ``reply``."""
    with EndpointProcess(default=reply) as server:
        one = make(server.url)
        walls = await timed(calls, one)
        await one.close()
    return walls, server.requests


def long_history(steps: int) -> list[Message]:
    """An earlier conversation of ``steps`` tool calls, each with a 2,000-character result."""
    history = [Message(role="user", content="Read the notes and summarise them.")]
    for n in range(steps):
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"notes/{n}.txt"})
        history.append(Message(role="assistant", content="", reasoning="Next file.", tool_calls=[call]))
        history.append(Message(role="tool", content="x" * 2000, tool_call_id=f"c{n}", name="read_file"))
    return history


class Plain:
    """One single-step run per call through the harness (streamed: with a live-view listener)."""

    def __init__(self, url: str, streamed: bool, history: list[Message] | None = None) -> None:
        self.harness = ChatCompletionsHarness(endpoint(url))
        self.streamed = streamed
        self.history = history or []

    async def __call__(self, i: int) -> object:
        return await self.harness.run(request(i, self.streamed, self.history))

    async def close(self) -> None:
        await self.harness.client.aclose()


class Stored:
    """One run per call through ``Workspace.run``: priced, built and written to the store."""

    def __init__(self, url: str, root: str) -> None:
        self.harness = ChatCompletionsHarness(endpoint(url))
        self.ws = open_workspace(root, harness=self.harness, budget=Budget(None))
        self.spec = machine(with_judge=False)

    async def __call__(self, i: int) -> object:
        return await self.ws.run(self.spec, f"question {i}")

    async def close(self) -> None:
        await self.harness.client.aclose()


async def part_a(calls: int) -> None:
    print(f"(a) overhead per model call, {calls} single-step runs one after another, no added latency")
    header()
    for key, streamed in (("plain", False), ("streamed", True)):
        walls, seen = await measure(calls, functools.partial(Plain, streamed=streamed))
        report_overhead(key, f"ChatCompletionsHarness.run, {key}", *overhead(walls, seen), True)
    history = long_history(20)
    walls, seen = await measure(calls, lambda url: Plain(url, False, history))
    report_overhead("history", "... plain, 41 messages before the reply", *overhead(walls, seen), True)
    with tempfile.TemporaryDirectory() as tmp:
        walls, seen = await measure(calls, lambda url: Stored(url, tmp))
    report_overhead("stored", "Workspace.run, stored", *overhead(walls, seen), False)


async def part_b(calls: int) -> None:
    pieces = 300
    chunks = pieces + 3  # the role chunk, the finish chunk and the usage chunk besides the text
    print(f"(b) per streamed chunk, {calls} streamed replies of {pieces} pieces: our CPU time per chunk")
    header()
    reply = text("abc" * pieces, chunk_chars=3, prompt_tokens=40, completion_tokens=pieces)
    with EndpointProcess(default=reply) as server:
        one = Plain(server.url, True)
        for i in range(5):
            await one(-1 - i)
        started = time.process_time()
        for i in range(calls):
            await one(i)
        cpu = time.process_time() - started
        await one.close()
    show("chunk", "CPU per chunk, all of ours", cpu / (calls * chunks) * 1e6, "us", TARGET_CHUNK_US)


def responder(request: Recorded) -> Item:
    """Judge calls get a verdict, the machine's calls an answer."""
    if request.body.get("model") == JUDGE_MODEL:
        return text(VERDICT, prompt_tokens=300, completion_tokens=30)
    return text("The answer is 42.", prompt_tokens=40, completion_tokens=6)


async def warm_up() -> None:
    """One graded case in a workspace and endpoint of its own: what a process builds once (imports,
    record schemas) is not counted as the suite's."""
    with EndpointProcess(responder=responder) as server, tempfile.TemporaryDirectory() as tmp:
        ws = open_workspace(
            tmp, harness=ChatCompletionsHarness(endpoint(server.url)), judge_model=JUDGE_MODEL
        )
        await run_suite(ws, machine(), [Case(id="warm", input="question")])
        await ws.aclose()


async def part_c(runs: int, latency_ms: float, concurrency: int) -> None:
    print(
        f"(c) {runs} graded runs, one judge criterion each, concurrency {concurrency}, "
        f"{latency_ms:g} ms per call at the endpoint"
    )
    header()
    await warm_up()
    with (
        EndpointProcess(latency_ms=latency_ms, responder=responder) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        h = ChatCompletionsHarness(endpoint(server.url))
        ws = open_workspace(tmp, harness=h, budget=Budget(100.0), judge_model=JUDGE_MODEL)
        spec = machine()
        cases = [Case(id=f"c{i}", input=f"question {i}") for i in range(runs)]
        finished: list[Run] = []
        started = time.perf_counter()
        report = await run_suite(ws, spec, cases, concurrency=concurrency, on_run=finished.append)
        wall = time.perf_counter() - started
        await ws.aclose()
    calls = len(server.requests)
    judged = sum(1 for r in server.requests if r.model == JUDGE_MODEL)
    expected = latency_ms / 1000 * calls / concurrency
    scored = sum(1 for r in finished if r.score is not None)
    print(
        f"  runs {report.runs} (errors {report.errors}, scored {scored}), calls at the endpoint {calls} "
        f"({calls / max(runs, 1):.2f} per run, {judged} of them the judge's); spent ${ws.budget.spent:.4f}"
    )
    extra = f"   wall {wall:.3f} s, expected L x calls / concurrency {expected:.3f} s"
    show("ratio", "wall / expected", wall / expected, "x", TARGET_RATIO, extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 calls and 64 runs")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--before", type=Path, help="figures (from --json) to show as before")
    args = parser.parse_args()
    calls, runs = (100, 64) if args.quick else (args.calls, args.runs)
    if args.before:
        BEFORE.clear()
        BEFORE.update(json.loads(args.before.read_text()))
    print(f"python {sys.version.split()[0]}, endpoint: own process, 127.0.0.1")
    anyio.run(part_a, calls)
    anyio.run(part_b, max(calls // 10, 10))
    anyio.run(part_c, runs, args.latency_ms, args.concurrency)
    if args.json:
        args.json.write_text(json.dumps(FIGURES, indent=2) + "\n")


if __name__ == "__main__":
    main()
