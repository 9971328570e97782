"""``machine export``: a machine's good runs as chat JSONL for fine-tuning."""

from __future__ import annotations

from typing import get_args

import click

from machine.learn import TagFilter, export

from ._options import handle_errors, with_workspace, workspace_from
from ._render import dump_json


@click.command("export")
@click.argument("name")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The JSONL file to write (0600).")
@click.option("--tree", is_flag=True, help="Export the whole family (NAME and NAME/...), each its own runs.")
@click.option("--min-score", type=float, default=1.0, show_default=True, help="The score a run must reach.")
@click.option(
    "--best", type=click.IntRange(min=1), default=None, metavar="K", help="Each case's best K runs."
)
@click.option(
    "--since", default=None, metavar="SUITE|TIME", help="Only runs of this suite, or since this time."
)
@click.option("--cases", "cases_file", default=None, metavar="FILE", help="Only runs of these cases.")
@click.option(
    "--from",
    "source",
    default=None,
    metavar="OTHER",
    help="Export OTHER's runs as NAME's (its reasoning rewritten).",
)
@click.option("--per-turn", is_flag=True, help="One example per assistant message, ending at it.")
@click.option(
    "--tags",
    type=click.Choice(get_args(TagFilter)),
    default="all",
    show_default=True,
    help="good: only runs marked good; bad: only runs marked bad; all: graded runs (a bad mark keeps "
    "one out).",
)
@click.option(
    "--include-holdout",
    is_flag=True,
    help="Export the runs of held-out cases too (left out by default: they are what the gate measures).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def export_command(
    ctx: click.Context,
    /,
    name: str,
    out: str,
    tree: bool,
    min_score: float,
    best: int | None,
    since: str | None,
    cases_file: str | None,
    source: str | None,
    per_turn: bool,
    tags: TagFilter,
    include_holdout: bool,
    as_json: bool,
) -> None:
    """Write NAME's graded runs that score at least --min-score as chat JSONL: one {"messages", "tools",
    "metadata"} object a line, the instructions each run was given as its system message."""
    ws = workspace_from(ctx)
    cases = ws.cases(name, cases_file) if cases_file else None
    report = export(
        ws,
        name,
        out=out,
        tree=tree,
        min_score=min_score,
        best=best,
        since=since,
        cases=cases,
        source=source,
        per_turn=per_turn,
        tags=tags,
        include_holdout=include_holdout,
    )
    if as_json:
        dump_json(report)
        return
    kept = ", ".join(f"{step.left} {step.keeps.removeprefix('runs ')}" for step in report.funnel)
    click.echo(f"of {report.stored} stored runs: {kept}")
    examples = f"{report.rows} example{'' if report.rows == 1 else 's'}"
    runs = f"{report.runs} run{'' if report.runs == 1 else 's'}"
    click.echo(f"wrote {examples} from {runs} to {report.out} (readable only by you)")
    if report.held_out:
        held = f"{report.held_out} held-out case{'' if report.held_out == 1 else 's'}"
        click.echo(f"left out the runs of {held}, which the gate measures (--include-holdout exports them)")
    if report.redacted:
        secrets = f"{report.redacted} secret{'' if report.redacted == 1 else 's'}"
        click.echo(f"redacted {secrets} (keys, tokens, passwords) from what was written")
