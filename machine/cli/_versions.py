"""``machine versions``, ``propose``, ``commit`` and ``revert``: versions and the promotion gate."""

from __future__ import annotations

from typing import Any

import click

from machine.errors import BadInputError, CommitRefused
from machine.runs import inert
from machine.spec import DEFAULT_MIN_Z, UNRECORDED, VERSIONS_FILE, Version, checked_min_z
from machine.versions import (
    PROPOSE_TRIALS,
    VersionList,
    commit,
    current,
    format_report,
    live_history,
    propose,
    revert,
    update,
    versions,
)

from ._complete import machine_argument
from ._measure_options import concurrency_option, measuring, pass_score_option, trials_option
from ._options import fail, handle_errors, print_spend, spending_options, with_workspace, workspace_from
from ._progress import watching
from ._render import dump_json


def _line(version: Version) -> str:
    gate = ""
    if version.report is not None:
        gate = f"  gate: {version.report.outcome}"
        if version.forced:
            gate += " (committed with --force)"
    base = f" (priced as {version.base_model})" if version.base_model else ""
    when = version.created_at.strftime("%Y-%m-%d %H:%M")
    note = f"  {version.note}" if version.note else ""
    return inert(  # versions.json is a file, and a note may be a model's (the machinist's)
        f"{version.label:<4} {version.status:<8} {version.model}{base}  instructions text sha256 "
        f"{version.instructions_sha[:8]}  rubric {version.rubric[:8]}  {when}{note}{gate}"
    )


@click.command("versions")
@machine_argument()
@click.option(
    "--record", is_flag=True, help="Record the machine's files as they are now as a new live version."
)
@click.option("--note", default="", help="A note for the version --record makes.")
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def versions_command(ctx: click.Context, /, name: str, record: bool, note: str, as_json: bool) -> None:
    """List a machine's versions. With no versions.json yet, the machine as it is now is recorded as v1
    first, and that is said."""
    ws = workspace_from(ctx)
    first = not (ws.machines_dir / name / VERSIONS_FILE).exists()
    if record:
        recorded = update(ws, name, note=note)
        if not as_json:
            click.echo(f"{recorded.label} is live")
    listed = versions(ws, name)
    if first and (ws.machines_dir / name / VERSIONS_FILE).exists():
        where = ws.machines_dir.name + f"/{name}/{VERSIONS_FILE}"
        click.echo(f"recorded {name} as it is now as v1 (live), in {where}", err=True)
    matched = current(ws, name)
    history = live_history(ws, name)
    if as_json:
        numbers = [v.number for v in history]
        current_number = matched.number if matched else None
        dump_json(VersionList(machine=name, current=current_number, versions=listed, live_history=numbers))
        return
    for version in listed:
        click.echo(_line(version))
    click.echo(f"live history: {' -> '.join(v.label for v in history)} (revert goes back along it)")
    if matched is None:
        click.secho(
            f"note: the machine's files match no recorded version, so its runs record their version as "
            f"{UNRECORDED!r}; record them with `machine versions {name} --record`",
            fg="yellow",
        )
    elif not matched.live:
        click.secho(
            f"note: the machine's files match {matched.label} ({matched.status}), not the live version",
            fg="yellow",
        )


@click.command("propose")
@machine_argument()
@trials_option("Runs per held-out case, each.", default=PROPOSE_TRIALS)
@click.option(
    "--min-z",
    type=click.FloatRange(min=0),
    default=DEFAULT_MIN_Z,
    show_default=True,
    help="Standard errors the candidate's gain must reach to pass the gate.",
)
@click.option(
    "--allow-weak-gate",
    is_flag=True,
    help="Accept a --min-z below 1: a gate that passes gains chance alone often gives.",
)
@click.option(
    "--cases", "cases_file", default=None, metavar="FILE", help="Held-out cases (default: holdout.json)."
)
@concurrency_option
@pass_score_option
@click.option("--note", default="", help="A note kept with the candidate.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def propose_command(
    ctx: click.Context,
    /,
    name: str,
    trials: int,
    min_z: float,
    allow_weak_gate: bool,
    cases_file: str | None,
    concurrency: int,
    pass_score: float,
    note: str,
    as_json: bool,
    **spending: Any,
) -> None:
    """Make a pending candidate (the live version with --model) and measure it against the live version
    on the held-out cases. Only versions.json beside the machine is written (the candidate and its report);
    the machine's own files are not changed until a commit. --price-as prices a checkpoint as its base."""
    if not spending.get("model"):
        raise BadInputError(f"propose needs the candidate's model: machine propose {name} --model MODEL")
    checked_min_z(min_z, allow_weak_gate)  # before the workspace asks for anything
    options = measuring(trials, concurrency, pass_score)
    ws = workspace_from(ctx, **spending)
    from ._plan import print_plan  # here: the other version commands never import the learning layer

    print_plan(ws, "propose", name, model=spending["model"], trials=trials, cases=cases_file, min_z=min_z)
    with watching(ws, f"{name}: live and candidate", show=not as_json):
        candidate = ws.call(
            lambda: propose(
                ws,
                name,
                options,
                model=spending["model"],
                cases=cases_file,
                min_z=min_z,
                allow_weak_gate=allow_weak_gate,
                base_model=spending.get("price_as"),
                note=note,
            )
        )
    if as_json:
        dump_json(candidate.version)
    else:
        click.echo(inert(format_report(candidate.report)))
        if candidate.passed:
            click.echo(f"{candidate.label} is pending; make it live with `machine commit {name}`")
        else:
            why = {
                "not measured": (
                    "was not measured on every criterion"
                    if candidate.report.unmeasured
                    else "was not measured on enough of the cases"
                ),
                "not enough evidence": "has too little evidence behind it",
            }.get(candidate.report.outcome, "did not pass the gate")
            click.echo(
                f"{candidate.label} is pending but {why}: `machine commit {name}` refuses it "
                "(--force overrides)"
            )
    print_spend(ws.budget)


@click.command("commit")
@machine_argument()
@click.option(
    "--force",
    is_flag=True,
    help="Commit the candidate even though it did not pass the gate, or was measured elsewhere.",
)
@click.option(
    "--harness",
    default=None,
    metavar="NAME",
    help="The harness it will run on (default: the one it was measured on, as its gate report says).",
)
@with_workspace
@click.pass_context
@handle_errors
def commit_command(ctx: click.Context, /, name: str, force: bool, harness: str | None) -> None:
    """Make the newest pending candidate live, only if it passed the promotion gate on the harness and
    model it will run on: the harness it was measured on, unless --harness names another."""
    ws = workspace_from(ctx)
    try:
        version = commit(ws, name, force=force, harness=harness)
    except CommitRefused as refused:
        if refused.report is not None:
            click.echo(inert(format_report(refused.report)))
        fail(refused)
    forced = " (forced past the gate)" if version.forced else ""
    click.echo(
        inert(
            f"{version.label} is live{forced}: model {version.model}, held in {_files(version)}"
            f"{_measured_on(version)}"
        )
    )


def _measured_on(version: Version) -> str:
    """Where its gate measured it, said beside the commit, since that is where it was judged good."""
    side = version.report.after if version.report is not None else None
    if side is None or side.harness is None:
        return ""
    at = f" at {side.endpoint}" if side.endpoint else ""
    return f"; measured on the {side.harness} harness{at}"


def _files(version: Version) -> str:
    """The version files a committed version has (instructions.md, model.json), as the person reads them."""
    held = [file for file, text in version.files.items() if text is not None]
    return " and ".join(held) if held else "its machine file"


@click.command("revert")
@machine_argument()
@click.option(
    "--to",
    "to",
    default=None,
    metavar="VERSION",
    help="The version to make live (default: the one live before).",
)
@with_workspace
@click.pass_context
@handle_errors
def revert_command(ctx: click.Context, /, name: str, to: str | None) -> None:
    """Make the version live before the live one live again (or --to VERSION), writing back its
    instructions.md and model.json; reverting again steps further back."""
    ws = workspace_from(ctx)
    version = revert(ws, name, to=to)
    click.echo(inert(f"{version.label} is live again: model {version.model}; its files were written back"))
