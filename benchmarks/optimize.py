"""``optimize``, one round of 2 proposals on 20 cases x 3 trials with a model that answers at once: our
own time, and how many model calls the round makes against its bound and against GEPA's rule of thumb.

Each measurement works in a fresh temporary workspace (never the repository's machines): one machine,
``bench``, graded on two criteria (a check that the reply is ``yes``, weight 3, and a judged one, weight
1), with 20 cases and a held-out file of 4. Its runs, the optimizer's and the judge's all go to
in-process models that reply at once and count their calls: the machine answers ``yes`` on the even
cases under its live instructions, and always ``yes`` or always ``no`` under a proposal that says so;
the optimizer replies with the next proposal of the scenario; the judge gives every run 1. So all the
wall time of ``optimize`` is ours: running, grading and storing runs, the brief, the decision, and
writing the kept candidate.

1. **Overhead of one round** (the round where one proposal is kept, the live version measured from
   scratch): the median of several repeats, each in a fresh workspace, after one uncounted warm-up
   (imports). Target: <= 0.5 s. One more repeat under cProfile splits it into running the machine,
   grading, storing, the brief and the rest. For reference, the same round once the live version's
   runs are stored (a second call on the same workspace, both proposals rejected).
2. **Model calls per round**, counted at the models, in two scenarios: both proposals rejected, and one
   kept. Machine runs and optimizer calls are compared with the bound (proposals x cases x trials) +
   (the live version's missing runs) + (optimizer calls); the runs on the held-out cases and the judge
   calls are shown apart. The ratio is to GEPA's rule of thumb for the same search: 2 x minibatch (3)
   runs per rejected proposal, that plus the validation set (the cases) per accepted one. A second call
   on the same workspace shows the live version's runs reused (0 new live runs).

Prints figures next to their targets; asserts nothing.

    .venv/bin/python benchmarks/optimize.py [--repeats 7] [--quick]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio

from machine import Budget, open_workspace
from machine.learn import Optimization, optimize
from machine.runs import Effort, HarnessRequest, HarnessResult, Message, Turn, run_loop
from machine.versions import revert

TARGET_S = 0.5
CASES = 20
HOLDOUT = 4
TRIALS = 3
PROPOSALS = 2
GEPA_MINIBATCH = 3

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, instructions_from, judge

rubric = define_rubric(
    {
        "agrees": {"description": "The reply is yes.", "weight": 3},
        "polite": {"description": "The reply is polite.", "weight": 1},
    }
)

machine = define_machine(
    name="bench",
    intent="Answer whether the number in the question is a number, with yes or no.",
    instructions=instructions_from(__file__),
    model="bench/instant",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"agrees": check("yes", lambda run: run.output == "yes"), "polite": judge()}
    ),
)
"""
LIVE = "Answer the question with yes or no."
YES = "Read the question, then always answer yes: every number in a question is a number."
NO_1 = "Read the question, then always answer no, in one word."
NO_2 = "Read the question carefully, then always answer no, and nothing else."
SCENARIOS = {"rejected": (NO_1, NO_2), "kept": (YES, NO_1)}
"""Each scenario's proposals, in the order the optimizer sends them."""
OPTIMIZER_MARK = "You improve the instructions of another agent"


class Instant:
    """The machine's model and the optimizer's, replying at once and counting their calls: the machine
    answers by its instructions, the optimizer with the next of ``proposals``."""

    name = "instant"

    def __init__(self, proposals: Sequence[str]) -> None:
        self.proposals = list(proposals)
        self.calls: Counter[str] = Counter()

    def answer(self, request: HarnessRequest) -> str:
        if OPTIMIZER_MARK in request.instructions:
            self.calls["optimizer"] += 1
            proposal = self.proposals[(self.calls["optimizer"] - 1) % len(self.proposals)]
            said = "The failing runs answered no where yes was right, so the rule is now stated once."
            return f"{said}\n<instructions>\n{proposal}\n</instructions>"
        self.calls["holdout" if request.input.startswith("Held") else "machine"] += 1
        if "always answer yes" in request.instructions:
            return "yes"
        if "always answer no" in request.instructions:
            return "no"
        number = int(re.findall(r"\d+", request.input)[0])
        return "yes" if number % 2 == 0 else "no"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        text = self.answer(request)

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text))

        return await run_loop(request, reply)


class Judge:
    """The judges' model: every run polite, at once, each call counted."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        budget: Budget | None = None,
        kind: str = "grading",
    ) -> Turn:
        self.calls += 1
        reply = {"criteria": {"polite": {"reason": "short and civil", "score": 1}}}
        return Turn(Message(role="assistant", content=json.dumps(reply)))


def make_machine(root: Path) -> None:
    folder = root / "machines" / "bench"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
    (folder / "instructions.md").write_text(LIVE + "\n", encoding="utf-8")
    cases = [{"id": f"c{n:02d}", "input": f"Is {n} a number?"} for n in range(CASES)]
    held = [{"id": f"h{n:02d}", "input": f"Held out: is {100 + n} a number?"} for n in range(HOLDOUT)]
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps(held), encoding="utf-8")


class Bench:
    """One workspace, its models, and the optimize calls made on it."""

    def __init__(self, root: Path, scenario: str) -> None:
        make_machine(root)
        self.harness = Instant(SCENARIOS[scenario])
        self.judge = Judge()
        self.ws = open_workspace(root, harness=self.harness, models=self.judge)

    async def optimize(self) -> tuple[Optimization, float]:
        start = time.perf_counter()
        found = await optimize(self.ws, "bench", trials=TRIALS, rounds=1, candidates=PROPOSALS)
        return found, time.perf_counter() - start

    def live_missing(self, label: str = "v1") -> int:
        """Trials of the live version on the cases that no stored graded run stands for."""
        stored: Counter[str] = Counter(
            run.case_id or ""
            for run in self.ws.store.iter_runs("bench")
            if run.version == label and run.status == "ok" and run.scorecard is not None
        )
        return sum(max(0, TRIALS - stored[f"c{n:02d}"]) for n in range(CASES))


def fresh(scenario: str) -> tuple[Optimization, float]:
    """One optimize call in a fresh workspace, and its wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as temp:
        bench = Bench(Path(temp), scenario)
        return anyio.run(bench.optimize)


PARTS = {
    "running the machine": (("_workspace.py", "run"),),
    "grading": (("_workspace.py", "grade"),),
    "storing": (("_store.py", "put_many"), ("_store.py", "put")),
    "the brief": (("_reflect.py", "brief"),),
    "writing the candidate": (("_result.py", "keep"),),
}
"""Each part's entry functions (file, name). What one part calls of another directly (the candidate's
runs stored again under its version, the optimizer's runs graded and stored as they are made) counts
for the part called, not twice."""
WITHIN = {"reading versions.json, per run": (("_book.py", "version_label"),)}
"""Shown as a share of its own, inside the parts above."""


def _entry(key: tuple[str, int, str], entries: tuple[tuple[str, str], ...]) -> bool:
    return any(key[0].endswith(where) and key[2] == name for where, name in entries)


def split(profile: cProfile.Profile) -> dict[str, float]:
    """Seconds of each part: its entry functions' cumulative time (a coroutine's: its time on the
    stack), less what they spent directly in another part's."""
    stats = cast(Any, pstats.Stats(profile)).stats  # typeshed leaves the table out
    found = dict.fromkeys([*PARTS, *WITHIN], 0.0)
    for key, (_cc, _nc, _tt, cumulative, callers) in stats.items():
        for part, entries in {**PARTS, **WITHIN}.items():
            if not _entry(key, entries):
                continue
            found[part] += cumulative
            if part in WITHIN:
                continue
            for caller, (_c, _n, _t, spent) in callers.items():
                outer = next((p for p, e in PARTS.items() if p != part and _entry(caller, e)), None)
                if outer is not None:
                    found[outer] -= spent
    return found


def overhead(repeats: int) -> None:
    fresh("kept")  # imports, bytecode and the first store of the process: not counted
    walls = [fresh("kept")[1] for _ in range(repeats)]
    median = statistics.median(walls)
    print(
        f"1. Our overhead for one round: {PROPOSALS} proposals, {CASES} cases x {TRIALS} trials, "
        f"{HOLDOUT} held-out cases, one proposal kept, the live version measured from scratch"
    )
    print(
        f"   median {median:.3f} s of {repeats} fresh workspaces (min {min(walls):.3f}, max "
        f"{max(walls):.3f})   target <= {TARGET_S} s: {'ok' if median <= TARGET_S else 'OVER'}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as temp:
        bench = Bench(Path(temp), "rejected")
        anyio.run(bench.optimize)
        warm = [anyio.run(bench.optimize)[1] for _ in range(repeats)]
    print(
        f"   for reference, the live version's runs stored (both proposals rejected, same workspace): "
        f"median {statistics.median(warm):.3f} s"
    )
    profile = cProfile.Profile()
    profile.enable()
    _, profiled = fresh("kept")
    profile.disable()
    parts = split(profile)
    rest = profiled - sum(parts[k] for k in PARTS)
    shares = [f"{k} {100 * v / profiled:.0f}%" for k, v in parts.items() if k in PARTS]
    print(f"   split, one more under cProfile ({profiled:.3f} s with the profiler): " + ", ".join(shares))
    within = ", ".join(f"{k} {100 * v / profiled:.0f}%" for k, v in parts.items() if k in WITHIN)
    print(f"   the rest {100 * max(rest, 0.0) / profiled:.0f}% (event loop, task groups, deciding); {within}")


def gepa(rejected: int, accepted: int) -> int:
    """GEPA's rule of thumb for the runs of a search: parent and child on a minibatch per proposal, and
    the validation set (here the cases, once each) for each accepted one."""
    return (rejected + accepted) * 2 * GEPA_MINIBATCH + accepted * CASES


def calls_line(bench: Bench, found: Optimization, missing: int, before: Counter[str], judged: int) -> None:
    """One call's model calls, counted at the models, against the bound and GEPA's rule of thumb."""
    made = bench.harness.calls - before
    judges = bench.judge.calls - judged
    proposals = [p for r in found.report.rounds for p in r.proposals]
    measured = sum(1 for p in proposals if p.cases is not None)
    kept = sum(1 for p in proposals if p.outcome == "kept")
    asked = len(proposals)
    bound = asked * CASES * TRIALS + missing + made["optimizer"]
    ours = made["machine"] + made["optimizer"]
    calls = found.report.calls
    print(
        f"   machine runs on the cases {made['machine']} + optimizer calls {made['optimizer']} = {ours}; "
        f"bound {asked} x {CASES} x {TRIALS} + {missing} live missing + {made['optimizer']} = {bound}: "
        f"{'ok' if ours <= bound else 'OVER'}"
    )
    print(
        f"   apart: {made['holdout']} runs on the held-out cases, {judges} judge calls "
        f"({judges / max(calls.new, 1):.1f} per new run); "
        f"the report: {calls.new} new runs, {calls.optimizer} optimizer calls"
    )
    reuse = "ok" if missing or calls.live_new == 0 else "NOT REUSED"
    print(
        f"   live version: {missing} runs missing before the call, {calls.live_new} new live runs (cases "
        f"and held-out), {calls.reused} reused" + ("" if missing else f": {reuse}")
    )
    rule = gepa(measured - kept, kept)
    whole = made["machine"] + made["holdout"]
    print(
        f"   GEPA's rule of thumb, {measured - kept} rejected + {kept} accepted: {rule} runs; ours / "
        f"GEPA's: {made['machine'] / rule:.1f}x on the cases ({made['machine'] / rule / TRIALS:.1f}x per "
        f"trial), {whole / rule:.1f}x with the held-out runs"
    )


def scenario(name: str) -> None:
    """Two optimize calls on one workspace: the first from scratch, the second with the live version's
    runs stored (after the first one's candidate, if it kept one, is reverted)."""
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as temp:
        bench = Bench(Path(temp), name)
        for call in ("first call, fresh workspace", "second call, same workspace"):
            missing, before, judged = bench.live_missing(), Counter(bench.harness.calls), bench.judge.calls
            found, _ = anyio.run(bench.optimize)
            outcomes = ", ".join(f"{p.label} {p.outcome}" for r in found.report.rounds for p in r.proposals)
            print(f"   {call} ({outcomes}):")
            calls_line(bench, found, missing, before, judged)
            if found.kept:
                revert(bench.ws, "bench")


def counts() -> None:
    print(
        "2. Model calls per round, counted at the models (bound: proposals x cases x trials + the live "
        "version's missing runs + optimizer calls)"
    )
    for name in SCENARIOS:
        print(f"  {name}: proposals {' / '.join(repr(p[:40]) for p in SCENARIOS[name])}")
        scenario(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    args = parser.parse_args()
    overhead(3 if args.quick else args.repeats)
    counts()


if __name__ == "__main__":
    main()
