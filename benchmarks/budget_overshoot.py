"""How far past its cap a budget lets a suite spend at concurrency 8, as a multiple of one model call's cost.
Prints figures next to their target; asserts nothing.

A machine with one case per run (64 cases) runs through ``run_suite(..., concurrency=8)`` on the
chat-completions harness against the tests' local OpenAI-compatible server (127.0.0.1, every call taking
``--latency-ms``), under caps from far below one call's cost to many calls' worth. The endpoint reports:

- ``most``: every call uses all it may (the ``max_tokens`` the request sent, and a large prompt): each
  call costs the most it can legitimately cost, the worst case for a cap;
- ``hostile``: usage that cannot be right (negative, NaN, more output than allowed, in turn).

``--harness opencode`` or ``--harness pi`` runs the same suite through that host (the real binary from
``.venv/npm``, ``make hosts``), whose calls go through the model proxy; the default is the chat harness.

For each cap: what was spent, the overshoot (spent - cap, at least 0) in calls (overshoot / one call's
cost, where one call's cost is what a call is charged: its full cost under ``most``, its reservation under
``hostile``), and the number of calls the endpoint answered. Target: the largest overshoot <= 8 calls.

    .venv/bin/python benchmarks/budget_overshoot.py [--latency-ms 20] [--concurrency 8] [--harness pi]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.openai_server import FakeOpenAI, Recorded, Reply  # noqa: E402

from machine import (  # noqa: E402
    Budget,
    Case,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    run_suite,
)
from machine.clients.chat import ChatClient, ChatCompletionsHarness, Endpoint  # noqa: E402

MODEL = "Qwen/Qwen3.8-27B"  # $1.86 input, $5.595 output per million tokens
MAX_TOKENS = 4096
PROMPT_TOKENS = 2000
CAPS = (0.0001, 0.001, 0.01, 0.05, 0.2)
TARGET_CALLS = 8.0

rubric = define_rubric({"any": {"description": "Anything.", "weight": 1}})
MACHINE = define_machine(
    name="spender",
    intent="Spend.",
    instructions="Answer. " * 200,
    model=MODEL,
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"any": check("any", lambda run: 1.0)}),
)


def most(request: Recorded) -> Reply:
    allowed = int((request.body or {}).get("max_tokens") or 0)
    return Reply(content="ok", prompt_tokens=PROMPT_TOKENS, completion_tokens=allowed)


BAD = itertools.cycle(
    [
        {"prompt_tokens": 10, "completion_tokens": -4_000_000_000},
        {"prompt_tokens": float("nan"), "completion_tokens": 5},
        {"prompt_tokens": 10, "completion_tokens": 10**9},
    ]
)


def hostile(request: Recorded) -> Reply:
    return Reply(content="ok", raw_usage=next(BAD))


def make(name: str, url: str) -> Any:
    """The harness called ``name`` against ``url``: the chat harness, or a host with its own retries off."""
    npm = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
    if name == "opencode":
        from machine.clients.hosts.opencode import OpencodeHarness

        return OpencodeHarness(binary=npm / "opencode", base_url=url, max_retries=0)
    if name == "pi":
        from machine.clients.hosts.pi import PiHarness

        return PiHarness(binary=npm / "pi", base_url=url, max_retries=0)
    endpoint = Endpoint("openai", url, timeout_s=10, max_attempts=1, max_tokens=MAX_TOKENS)
    return ChatCompletionsHarness(endpoint, client=ChatClient(endpoint), stream=False)


async def measure(
    cap: float, responder: Any, latency_ms: float, concurrency: int, name: str = "chat"
) -> tuple[float, int, float]:
    """What the suite spent under ``cap``, the calls answered, and what one call was charged."""
    with (
        FakeOpenAI(responder=responder, latency_ms=latency_ms) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        harness = make(name, server.url + "/v1")
        budget = Budget(cap)
        ws = open_workspace(Path(tmp), harness=harness, budget=budget)
        cases = [Case(id=f"c{i}", input=f"case {i}") for i in range(64)]
        try:
            await run_suite(ws, MACHINE, cases, concurrency=concurrency)
        finally:
            await ws.aclose()
        answered = sum(1 for r in server.requests if r.played == "reply")
    return budget.spent, answered, budget.spent / answered if answered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="accepted for make bench; the sizes are small")
    parser.add_argument("--harness", choices=("chat", "opencode", "pi"), default="chat")
    args = parser.parse_args()
    if args.harness != "chat":
        import os

        os.environ["MACHINE_MAX_TOKENS"] = str(MAX_TOKENS)  # the proxy clamps the hosts' calls to it
    worst = 0.0
    print(
        f"{args.harness}: concurrency {args.concurrency}, {MODEL}, max_tokens {MAX_TOKENS}, "
        f"latency {args.latency_ms:g} ms"
    )
    print(
        f"{'usage':8} {'cap $':>8} {'spent $':>9} {'calls':>6} {'one call $':>11} {'overshoot (calls)':>18}"
    )
    for name, responder in (("most", most), ("hostile", hostile)):
        for cap in CAPS:
            spent, calls, one = anyio.run(
                measure, cap, responder, args.latency_ms, args.concurrency, args.harness
            )
            over = max(spent - cap, 0.0) / one if one else 0.0
            worst = max(worst, over)
            print(f"{name:8} {cap:>8g} {spent:>9.4f} {calls:>6} {one:>11.5f} {over:>18.2f}")
    print(f"largest overshoot: {worst:.2f} calls   target: <= {TARGET_CALLS:g} calls")


if __name__ == "__main__":
    main()
