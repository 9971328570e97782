"""A budget covers the machine's runs, their judges and the optimizer's calls together: once it is spent
the search stops where it is, says where in the report, raises nothing and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.optimize import Keyed, block, make_shout, snapshot

from machine import Budget, UnknownPriceError, Usage, open_workspace
from machine.learn import optimize
from machine.learn.optimize import format_optimization
from machine.versions import versions

RUN = 10_000 * 1.86 / 1_000_000
"""What one machine run costs: 10,000 prompt tokens of Qwen/Qwen3.8-27B."""
ASK = 10_000 * 3.74 / 1_000_000
"""What one optimizer call costs: 10,000 prompt tokens of thinkingmachines/Inkling."""
LIVE_RUNS = 7


@pytest.mark.parametrize(
    ("cap", "where", "made", "asked"),
    [
        (3.5 * RUN, "measuring the live version on the cases: ", 4, 0),
        (LIVE_RUNS * RUN + 0.5 * ASK, "round 1, asking for r1.p2: ", LIVE_RUNS, 1),
        (LIVE_RUNS * RUN + 2 * ASK + 2.5 * RUN, "round 1, measuring its proposals on the cases: ", 10, 2),
        (LIVE_RUNS * RUN + 2 * ASK + 16.5 * RUN, "round 1, measuring on the held-out cases: ", 24, 2),
    ],
    ids=["live", "optimizer", "proposals", "held-out"],
)
async def test_a_budget_spent_mid_search_stops_it_cleanly(
    tmp_path: Path, cap: float, where: str, made: int, asked: int
) -> None:
    folder = make_shout(tmp_path)
    tokens = Usage(input_tokens=10_000)
    harness = Keyed([block("Say it in CAPITALS."), block("Say it. ONE more.")], tokens, tokens)
    budget = Budget(cap)
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    versions(ws, "shout")
    before = snapshot(folder)
    result = await optimize(ws, "shout", trials=1, rounds=2, candidates=2, concurrency=1)
    report = result.report
    assert report.stopped is not None and report.stopped.startswith(where)
    assert "budget of $" in report.stopped and "is spent" in report.stopped
    assert report.ended == "stopped early"
    assert f"stopped early: {report.stopped}" in format_optimization(report)
    assert result.candidate is None and report.kept is None
    assert snapshot(folder) == before
    assert [v.status for v in versions(ws, "shout")] == ["live"]
    assert (len(harness.machine_runs()), len(harness.optimizer)) == (made, asked)
    assert (report.calls.new, report.calls.optimizer) == (made, asked)
    assert report.cost.runs == pytest.approx(made * RUN)
    assert report.cost.optimizer == pytest.approx(asked * ASK)
    assert budget.spent == pytest.approx(report.cost.total)
    assert budget.spent < cap + max(RUN, ASK)


async def test_a_proposal_cut_short_on_the_cases_is_never_kept(tmp_path: Path) -> None:
    """Even a proposal that won on every run it made: the comparison stopped early, so it did not pass."""
    make_shout(tmp_path)
    tokens = Usage(input_tokens=10_000)
    harness = Keyed([block("Say it in CAPITALS.")], tokens)
    ws = open_workspace(tmp_path, harness=harness, budget=Budget(LIVE_RUNS * RUN + 5.5 * RUN))
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, concurrency=1)
    [p] = result.report.rounds[0].proposals
    assert p.cases is not None and p.cases.mean == 1.0  # every run it made was right
    assert p.outcome == "discarded" and "stopped early" in p.decision
    assert result.candidate is None


async def test_an_optimizer_model_with_no_known_price_is_refused_before_any_run(tmp_path: Path) -> None:
    folder = make_shout(tmp_path)
    harness = Keyed([block("Say it in CAPITALS.")], Usage(input_tokens=10_000))
    budget = Budget(1.0)
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    versions(ws, "shout")
    before = snapshot(folder)
    with pytest.raises(UnknownPriceError, match="model 'someone/unpriced' has no known price"):
        await optimize(ws, "shout", trials=1, rounds=1, candidates=1, optimizer_model="someone/unpriced")
    assert harness.seen == [] and budget.spent == 0.0
    assert list(ws.store.iter_runs("shout")) == [] and snapshot(folder) == before
