"""``machine export --format inspect``: a machine's runs as Inspect AI eval logs that ``inspect view``
opens. The writer is the ``inspect`` extra's adapter, imported only when the command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from machine.errors import BadInputError
from machine.learn import ExportOptions
from machine.ops import EvalLogOptions, export_eval_logs
from machine.runs import Redactor, counted, inert

from ._render import dump_json

if TYPE_CHECKING:
    from machine.workspace import Workspace


def refuse_training_flags(options: ExportOptions, cases_file: str | None) -> None:
    """The training export's filters mean nothing to an eval log, which holds every run: say so."""
    given = [f"--{name.replace('_', '-')}" for name in sorted(options.model_fields_set - {"out"})]
    given += ["--cases"] if cases_file else []
    if given:
        raise BadInputError(
            f"{', '.join(given)} {'selects' if len(given) == 1 else 'select'} runs to train on; an Inspect "
            "log holds every run, failing and unscored ones too: leave "
            f"{'it' if len(given) == 1 else 'them'} out, and choose the runs with --suite or --limit"
        )


def export_inspect(
    ws: Workspace, name: str, out: str, *, suite: str | None, limit: int | None, as_json: bool
) -> None:
    """Write and report the logs."""
    fields = {"out": out, "suite": suite} | ({"limit": limit} if limit is not None else {})
    report = export_eval_logs(ws, name, EvalLogOptions.of(**fields))
    if as_json:
        dump_json(report)
        return
    for log in report.logs:
        what = f"suite {log.suite_id}" if log.suite_id else f"version {log.version or '(none)'}"
        click.echo(inert(f"wrote {counted(log.samples, 'sample')} ({what}, {log.model}) to {log.path}"))
    click.echo(
        f"{counted(len(report.logs), 'eval')} of {counted(report.runs, 'run')}: inspect view --log-dir {out}"
    )
    if report.redacted:
        found = Redactor.described(report.redacted_kinds)
        click.echo(f"redacted {report.redacted} secret-looking things from what was written: {found}")
