"""How runs, scorecards and suites look in a terminal."""

from __future__ import annotations

import json
from typing import Any

import click

from .._runs import Run, Scorecard


def dump_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def fmt_score(score: float | None) -> str:
    return "UNSCORED" if score is None else f"{score:.2f}"


def scorecard_lines(scorecard: Scorecard) -> list[str]:
    lines = []
    for name, c in scorecard.criteria.items():
        mark = "?" if c.score is None else ("✓" if c.score >= 1.0 else "✗")
        reason = f" — {c.reason}" if c.reason else ""
        lines.append(f"  {mark} {name} (×{c.weight:g}, {c.grader}): {fmt_score(c.score)}{reason}")
    verdict = {True: "PASS", False: "FAIL", None: "UNSCORED"}[scorecard.passed]
    lines.append(f"  score {fmt_score(scorecard.score)} → {verdict} (pass score {scorecard.pass_score:g})")
    return lines


def print_run(run: Run, *, verbose: bool = True) -> None:
    if run.status == "error":
        click.echo(f"run {run.id} failed: {run.error}")
        return
    if verbose:
        for message in run.trajectory[1:]:
            if message.reasoning:
                click.secho(f"  (reasoning) {message.reasoning}", dim=True)
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
                click.secho(f"  → {call.name}({arguments})", fg="cyan")
            if message.role == "tool":
                click.secho(f"  ← {message.content[:300]}", fg="red" if message.is_error else "blue")
    click.echo(run.output)
    if run.scorecard is not None:
        click.echo("\n".join(scorecard_lines(run.scorecard)))
    click.secho(f"[run {run.id} · {run.model} via {run.harness} · ${run.cost_usd:.4f}]", dim=True)
