"""``machine export``: a machine's good runs as chat JSONL for fine-tuning, or (``--format inspect``) its
runs as Inspect AI eval logs."""

from __future__ import annotations

import click

from machine.errors import BadInputError
from machine.learn import ExportOptions, export
from machine.ops import EvalLogOptions
from machine.runs import Redactor, counted, inert

from ._complete import machine_argument
from ._export_inspect import export_inspect, refuse_training_flags
from ._model_options import model_options, option_kwargs
from ._options import handle_errors, with_workspace, workspace_from
from ._render import dump_json


@click.command("export")
@machine_argument()
@model_options(
    ExportOptions,
    skip=("cases",),  # read from the file --cases names
    flags={"source": "--from"},
    extra={
        "out": {"type": click.Path()},
        "best": {"metavar": "K"},
        "since": {"metavar": "SUITE|TIME"},
        "source": {"metavar": "OTHER"},
    },
)
@click.option("--cases", "cases_file", default=None, metavar="FILE", help="Only runs of these cases.")
@click.option(
    "--format",
    "form",
    type=click.Choice(["jsonl", "inspect"]),
    default="jsonl",
    show_default=True,
    help="jsonl: training examples; inspect: every selected run as Inspect AI eval logs in the folder --out.",
)
@click.option(
    "--suite", default=None, metavar="ID", help="With --format inspect: this suite's runs, one eval."
)
@click.option(
    "--limit",
    metavar="N",
    **{
        **option_kwargs(EvalLogOptions, "limit"),
        "default": None,
        "show_default": False,
        "help": "With --format inspect: the newest runs to write, one eval per suite, version and model "
        "(default: 100).",
    },
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def export_command(
    ctx: click.Context,
    /,
    name: str,
    options: ExportOptions,
    cases_file: str | None,
    form: str,
    suite: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Write NAME's graded runs that score at least --min-score as chat JSONL: one {"messages", "tools",
    "metadata"} object a line, the instructions each run was given as its system message. With --pairs,
    preference pairs for DPO instead: one {"prompt", "chosen", "rejected", "metadata"} object a line.
    With --format inspect, every run of a suite (--suite) or the newest runs (--limit), failing and
    unscored ones too, as Inspect AI eval logs in the folder --out, for `inspect view`."""
    ws = workspace_from(ctx)
    if form == "inspect":
        refuse_training_flags(options, cases_file)
        export_inspect(ws, name, str(options.out), suite=suite, limit=limit, as_json=as_json)
        return
    if suite is not None or limit is not None:
        raise BadInputError(
            "--suite and --limit choose the runs of an Inspect log: add --format inspect, or choose "
            "training runs with --since SUITE"
        )
    cases = ws.cases(name, cases_file) if cases_file else None
    report = export(ws, name, ExportOptions.of(options, cases=cases))
    if as_json:
        dump_json(report)
        return
    runs = counted(report.runs, "run")
    if report.pairs is not None:
        kinds = ", ".join(f"{n} {kind}" for kind, n in report.pairs.items())
        pairs = counted(report.rows, "preference pair")
        click.echo(f"wrote {pairs} ({kinds}) from {runs} to {report.out} (readable only by you)")
    else:
        kept = ", ".join(f"{step.left} {step.keeps.removeprefix('runs ')}" for step in report.funnel)
        click.echo(f"of {report.stored} stored runs: {kept}")
        click.echo(
            f"wrote {counted(report.rows, 'example')} from {runs} to {report.out} (readable only by you)"
        )
        click.echo(inert("from: " + ", ".join(f"{n} of {source}" for source, n in report.sources.items())))
    if report.held_out:
        held = f"{report.held_out} held-out case{'' if report.held_out == 1 else 's'}"
        click.echo(f"left out the runs of {held}, which the gate measures (--include-holdout exports them)")
    if report.redacted:
        things = "thing that looks like a secret" if report.redacted == 1 else "things that look like secrets"
        found = Redactor.described(report.redacted_kinds)
        click.echo(f"redacted {report.redacted} {things} from what was written: {found}")
    click.echo(
        "it holds the runs' prompts and outputs, tool results too: read it before you train on it or "
        "share it",
        err=True,
    )
