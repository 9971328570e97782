"""How runs, scorecards and suites look in a terminal."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import click
from pydantic import BaseModel

from machine.runs import Run, Scorecard, counted, inert, inert_json, passes

if TYPE_CHECKING:
    from machine.measure import CriterionResult


def dump_json(value: BaseModel | Sequence[BaseModel]) -> None:
    """A model (or a list of them) as ``--json`` prints it: the model's own dump, aliases and computed
    fields included, the same as the MCP server's structured results. The controls JSON leaves raw (C1,
    DEL, bidi) are written as ``\\u`` escapes: the same JSON to a parser, inert on a terminal."""
    data = (
        value.model_dump(mode="json", by_alias=True)
        if isinstance(value, BaseModel)
        else [item.model_dump(mode="json", by_alias=True) for item in value]
    )
    click.echo(inert_json(json.dumps(data, indent=2, ensure_ascii=False)))


def fmt_score(score: float | None) -> str:
    """A score with two decimals, or UNSCORED."""
    return "UNSCORED" if score is None else f"{score:.2f}"


def fmt_rate(rate: float | None) -> str:
    """A share as a whole percentage, or "-" when there was nothing to count."""
    return "-" if rate is None else f"{rate:.0%}"


def scorecard_lines(scorecard: Scorecard) -> list[str]:
    """A scorecard as lines: each criterion with its mark, weight, grader, score and reason (a model's or a
    check's words, made inert); the total."""
    lines = []
    for name, c in scorecard.criteria.items():
        mark = "?" if c.score is None else ("✓" if c.score >= 1.0 else "✗")
        reason = f" — {c.reason}" if c.reason else ""
        lines.append(inert(f"  {mark} {name} (×{c.weight:g}, {c.grader}): {fmt_score(c.score)}{reason}"))
    lines.append(inert(verdict_line(scorecard)))
    return lines


def fmt_pass_rate(rate: float | None, undecided: int) -> str:
    """``pass rate 50%``, and when it leaves runs out, how many an UNSCORED criterion could turn (they
    are neither passes nor fails)."""
    if not undecided:
        return f"pass rate {fmt_rate(rate)}"
    them = "it" if undecided == 1 else "them"
    why = f"{counted(undecided, 'run')} undecided: an unscored criterion could turn {them}"
    return (
        f"pass rate {fmt_rate(rate)} of decided runs ({why})"
        if rate is not None
        else f"no run decided ({why})"
    )


def raised_lines(criteria: Mapping[str, CriterionResult]) -> list[str]:
    """Each check that raised, where, and on how many runs: the person's bug, which a suite's mean hides
    (the criterion is left out of it, as UNSCORED)."""
    return [
        f"{name}: its check raised {where} on {counted(count, 'run')}, so it was not measured there; "
        "fix the check (a bug in it, not in the machine)"
        for name, figures in criteria.items()
        for where, count in figures.raised.items()
    ]


def verdict_line(scorecard: Scorecard) -> str:
    """The total: a plain PASS or FAIL only where every criterion was scored; otherwise the weight it was
    measured on, the criteria left UNSCORED, and whether they could still turn it (``Scorecard.passed``)."""
    score, pass_score = scorecard.score, f"(pass score {scorecard.pass_score:g})"
    if score is None:
        return "  UNSCORED: no criterion could be scored, so the run neither passes nor fails"
    measured = "PASS" if passes(score, scorecard.pass_score) else "FAIL"
    unscored = scorecard.unscored
    if not unscored:
        return f"  score {fmt_score(score)} → {measured} {pass_score}"
    weight, whole = scorecard.weights
    they, score_, are = ("it", "scores", "is") if len(unscored) == 1 else ("they", "score", "are")
    on = f"{measured} on {weight:g} of {whole:g} weight; {', '.join(unscored)} unscored"
    outcome = {
        True: f"a pass whatever {they} {score_}",
        False: f"a fail whatever {they} {score_}",
        None: f"undecided until {they} {are} scored",
    }[scorecard.passed]
    return f"  score {fmt_score(score)} → {on}: {outcome} {pass_score}"


def print_run(run: Run, *, verbose: bool = True) -> None:
    """A run's steps (with ``verbose``), output, scorecard and cost; what the model and the tools wrote
    made inert."""
    if run.status == "error":
        click.echo(inert(f"run {run.id} failed: {run.error}"))
        return
    if verbose:
        for message in run.trajectory[1:]:
            if message.reasoning:
                click.secho(inert(f"  (reasoning) {message.reasoning}"), dim=True)
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
                click.secho(inert(f"  → {call.name}({arguments})"), fg="cyan")
            if message.role == "tool":
                click.secho(inert(f"  ← {message.content[:300]}"), fg="red" if message.is_error else "blue")
    click.echo(inert(run.output))
    if run.scorecard is not None:
        click.echo("\n".join(scorecard_lines(run.scorecard)))
    click.secho(inert(f"[run {run.id} · {run.model} via {run.harness} · ${run.cost_usd:.4f}]"), dim=True)
