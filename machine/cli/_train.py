"""``machine train``: fine-tune the machine's model on its good runs, as a pending candidate."""

from __future__ import annotations

import sys
from typing import Any

import click

from machine.learn import StepMetrics, TrainSettings, train
from machine.ops import make_trainer
from machine.runs import Run
from machine.spec import DEFAULT_MIN_Z
from machine.versions import Candidate, format_report

from ._options import handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._render import dump_json


def _phase_echo(line: str) -> None:
    click.echo(line, err=True)


def _step_echo(metrics: StepMetrics) -> None:
    click.echo(_step_line(metrics), err=True)


def _step_line(metrics: StepMetrics) -> str:
    loss = "-" if metrics.loss is None else f"{metrics.loss:.4f}"
    return (
        f"  step {metrics.step} (epoch {metrics.epoch}): loss {loss}, {metrics.tokens} tokens, "
        f"{metrics.seconds:.1f} s, ${metrics.cost_usd:.4f}"
    )


@click.command("train")
@click.argument("name")
@click.option(
    "--samples", type=click.IntRange(min=0), default=0, show_default=True, help="New runs per case first."
)
@click.option(
    "--trials", type=click.IntRange(min=1), default=3, show_default=True, help="Runs per held-out case, each."
)
@click.option(
    "--best-of", type=click.IntRange(min=1), default=2, show_default=True, help="Best runs kept a case."
)
@click.option("--min-score", type=float, default=1.0, show_default=True, help="The score a run must reach.")
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=None, help="Learning rate.")
@click.option(
    "--rank", type=click.IntRange(min=1), default=None, help="LoRA rank (default: 32 on Tinker, 16 local)."
)
@click.option(
    "--max-length", type=click.IntRange(min=2), default=None, help="Tokens a training sequence is cut to."
)
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=8, show_default=True, help="Sequences a step."
)
@click.option(
    "--lora-alpha", type=click.IntRange(min=1), default=None, help="LoRA scale (local; default: 2 x rank)."
)
@click.option(
    "--lora-dropout",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=None,
    help="Dropout on the LoRA layers (local; default: 0.05).",
)
@click.option(
    "--target-modules",
    default=None,
    metavar="NAMES",
    callback=lambda _ctx, _param, text: _modules(text),
    help="Comma-separated modules the adapter wraps (local; default: q_proj,k_proj,v_proj,o_proj).",
)
@click.option("--any-model", is_flag=True, help="Learn from other models' runs too (distillation).")
@click.option(
    "--trainer",
    default=None,
    help="Who trains: local for a local: model, tinker otherwise (the default).",
)
@click.option(
    "--resume", default=None, metavar="ID", help="Continue the stopped training with this record id."
)
@click.option(
    "--min-z",
    type=click.FloatRange(min=0),
    default=DEFAULT_MIN_Z,
    show_default=True,
    help="Standard errors the checkpoint's held-out gain must reach to pass the gate.",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--pass-score", type=float, default=1.0, show_default=True, help="Score a run needs to pass.")
@click.option("--json", "as_json", is_flag=True, help="Print the candidate as JSON.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def train_command(
    ctx: click.Context,
    /,
    name: str,
    samples: int,
    trials: int,
    best_of: int,
    min_score: float,
    epochs: int,
    lr: float | None,
    rank: int | None,
    max_length: int | None,
    batch_size: int,
    lora_alpha: int | None,
    lora_dropout: float | None,
    target_modules: list[str] | None,
    any_model: bool,
    trainer: str | None,
    resume: str | None,
    min_z: float,
    concurrency: int,
    pass_score: float,
    as_json: bool,
    **spending: Any,
) -> None:
    """Fine-tune NAME's model on its good runs (sampling --samples more of each case first), then measure the
    checkpoint against the live version on holdout.json: a pending candidate, committed only if it passed."""
    ws = workspace_from(ctx, **spending)
    loud = not as_json
    effort = None if ws.effort is None else ws.effort.value
    settings = TrainSettings(
        base_model="", epochs=epochs, learning_rate=lr, rank=rank, max_length=max_length,
        batch_size=batch_size, effort=effort, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
        target_modules=target_modules,
    )  # fmt: skip
    on_run = _run_line if loud and sys.stderr.isatty() else None
    candidate = ws.call(lambda: train(
        ws, name, samples=samples, trials=trials, best_of=best_of, min_score=min_score,
        settings=settings, any_model=any_model, min_z=min_z, trainer=trainer,
        make_trainer=make_trainer, resume=resume, concurrency=concurrency, pass_score=pass_score,
        on_run=on_run, on_step=_step_echo if loud else None, on_phase=_phase_echo if loud else None,
    ))  # fmt: skip
    if as_json:
        dump_json(candidate.version)
    else:
        _render(name, candidate)
    print_spend(ws.budget)


def _modules(text: str | None) -> list[str] | None:
    """``--target-modules q_proj, v_proj`` as names; one with no name in it is refused."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(not name.replace("_", "").replace(".", "").isalnum() for name in names):
        raise click.BadParameter(f"{text!r} is not a comma-separated list of module names (q_proj,v_proj)")
    return names


def _run_line(run: Run) -> None:
    score = "failed" if run.status == "error" else "-" if run.score is None else f"{run.score:.2f}"
    click.echo(f"  run {run.case_id} ({run.version}): {score}", err=True)


def _render(name: str, candidate: Candidate) -> None:
    click.echo(format_report(candidate.report))
    if candidate.passed:
        click.echo(f"{candidate.label} is pending: make it live with `machine commit {name}`")
    else:
        click.echo(
            f"{candidate.label} is pending but did not pass the gate: `machine commit {name}` refuses "
            "it (--force overrides)"
        )
