"""``machine import``: samples and traces kept elsewhere as observed runs of a machine."""

from __future__ import annotations

import click

from machine.ops import IMPORT_FORMATS, ImportFormat, import_runs
from machine.runs import Redactor, counted, inert

from ._complete import machine_argument
from ._options import handle_errors, with_workspace, workspace_from
from ._render import dump_json


@click.command("import")
@machine_argument()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "format_",
    type=click.Choice(IMPORT_FORMATS),
    default=None,
    help="What FILE holds: an Inspect eval log, chat JSONL or OTLP/JSON traces (default: told from FILE).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def import_command(
    ctx: click.Context, /, name: str, file: str, format_: ImportFormat | None, as_json: bool
) -> None:
    """Store the samples of an Inspect eval log (.eval or .json), the conversations of a chat JSONL file
    (one {"messages": [...]} a line, as export writes them) or the GenAI traces of an OTLP/JSON file as
    observed runs of NAME, unlabelled: grade them with `machine eval`, mark them, export and train on
    them. A file out of shape is refused whole; secrets are redacted as export redacts them."""
    ws = workspace_from(ctx)
    report = import_runs(ws, name, file, format_)
    if as_json:
        dump_json(report)
        return
    click.echo(
        inert(f"imported {counted(report.runs, 'observed run')} of {report.machine} from {report.file}")
    )
    if report.skipped:
        click.echo(inert(f"passed over {report.skipped}: " + "; ".join(report.skipped_why)))
    if report.redacted:
        things = "thing that looks like a secret" if report.redacted == 1 else "things that look like secrets"
        click.echo(f"redacted {report.redacted} {things}: {Redactor.described(report.redacted_kinds)}")
    click.echo(
        f"grade them: machine eval {report.machine} RUN_ID; list them: machine observed {report.machine}"
    )
