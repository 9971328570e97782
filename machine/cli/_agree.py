"""``machine agree``: a candidate grader measured against a machine's own grader on stored runs."""

from __future__ import annotations

import click

from machine.measure import BASE_PASS_RATES, REFERENCE_PASS, THRESHOLDS, AgreementReport, AtThreshold, agree
from machine.runs import CriterionScore, Run, inert

from ._complete import machine_argument
from ._measure_options import concurrency_option
from ._options import handle_errors, print_spend, with_workspace, workspace_from
from ._progress import watching
from ._render import dump_json, fmt_rate, fmt_score
from ._table import print_table

SHOWN_DISAGREEMENTS = 20


@click.command("agree")
@machine_argument()
@click.argument("criterion")
@click.option(
    "--with",
    "candidate",
    type=click.Choice(["jev", "judge"]),
    required=True,
    help="The candidate grader: a model judge, or Jev (a yes/no question from the criterion's description).",
)
@click.option(
    "--judge-model",
    default=None,
    metavar="MODEL",
    help="The candidate judge's model (default: $MACHINE_JUDGE_MODEL, else Inkling-Small); with --with jev, "
    "the Jev model.",
)
@click.option(
    "--judge-effort",
    default=None,
    metavar="EFFORT",
    help="The candidate judge's reasoning effort (default medium).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the newest N graded runs.")
@click.option(
    "--threshold",
    "thresholds",
    type=click.FloatRange(0.0, 1.0),
    multiple=True,
    metavar="X",
    help="A pass mark on the candidate's score to report at (repeatable; default 0.3, 0.5 and 0.7).",
)
@concurrency_option
@click.option(
    "--no-regrade",
    is_flag=True,
    help="Leave out runs whose stored reference grade is missing, UNSCORED or from another rubric, "
    "instead of grading them again with the machine's own grader.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--budget",
    default="1",
    show_default=True,
    metavar="USD|none",
    help="Stop starting new grading once this much is spent; 'none' lifts the cap.",
)
@click.option(
    "--price-as",
    "price_as",
    default=None,
    metavar="MODEL",
    help="Charge a model with no listed price at this model's price.",
)
@with_workspace
@click.pass_context
@handle_errors
def agree_command(
    ctx: click.Context,
    /,
    name: str,
    criterion: str,
    candidate: str,
    judge_model: str | None,
    judge_effort: str | None,
    limit: int | None,
    thresholds: tuple[float, ...],
    concurrency: int,
    no_regrade: bool,
    as_json: bool,
    budget: str,
    price_as: str | None,
) -> None:
    """Grade NAME's stored runs on CRITERION with a candidate grader and measure it against the machine's
    own grader (stored grades reused). The reference passes at a score of at least 0.5; the candidate at
    each threshold. Reports agreement, Cohen's kappa, false-pass and false-fail rates, precision, bits per
    label, the share of bad runs a candidate filter keeps at 10% and 50% base pass rates, the runs where
    they disagree and how many candidates are unsure (0.3 to 0.7)."""
    ws = workspace_from(ctx, budget=budget, price_as=price_as)
    with watching(ws, f"{name} · {criterion}: candidate grades", show=not as_json) as bar:

        def graded(run: Run, score: CriterionScore) -> None:
            if bar is not None:
                bar.advance(f"last: {run.case_id or run.id} {fmt_score(score.score)}")

        report = ws.call(
            lambda: agree(
                ws,
                name,
                criterion,
                candidate=candidate,
                limit=limit,
                thresholds=thresholds or THRESHOLDS,
                concurrency=concurrency,
                judge_model=judge_model,
                judge_effort=judge_effort,
                regrade=not no_regrade,
                on_grade=graded,
            )
        )
    if as_json:
        dump_json(report)
    else:
        _print_report(report)
    print_spend(ws.budget)


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_report(report: AgreementReport) -> None:
    click.echo(
        inert(
            f"{report.machine} · {report.criterion}: candidate {report.candidate_grader} against the "
            f"machine's {report.reference_grader} (reference passes at >= {REFERENCE_PASS:g})"
        )
    )
    regraded = f", {report.reference_regraded} regraded" if report.reference_regraded else ""
    stale = f", {report.reference_stale} left out as stale (--no-regrade)" if report.reference_stale else ""
    click.echo(
        f"{report.runs} graded runs: {report.reference_reused} stored reference grades reused"
        f"{regraded}{stale}; "
        f"{report.reference_unscored} reference UNSCORED, {report.candidate_unscored} candidate UNSCORED "
        f"(left out); compared on {report.n}"
    )
    for reason, count in report.reference_unscored_reasons.items():
        click.secho(inert(f"  reference UNSCORED x{count}: {reason[:300]}"), fg="yellow")
    for reason, count in report.unscored_reasons.items():
        click.secho(inert(f"  candidate UNSCORED x{count}: {reason[:300]}"), fg="yellow")
    if report.n == 0:
        click.secho("no run has both grades scored: nothing to compare", fg="yellow")
        return
    headers = ["threshold", "agree", "kappa", "false+", "false-", "prec", "bits"]
    headers += [f"kept bad @{b:.0%}" for b in BASE_PASS_RATES]
    rows = [_threshold_row(s) for s in report.thresholds]
    print_table(headers, rows, right=range(len(headers)))
    click.echo(
        f"unsure candidates (0.3 to 0.7): {report.unsure} of {report.n}; escalate these to a stronger grader"
    )
    if not report.disagreements:
        click.echo("the graders agree on every run at every threshold")
        return
    click.echo(f"disagreements ({len(report.disagreements)}):")
    for d in report.disagreements[:SHOWN_DISAGREEMENTS]:
        p = d.pair
        at = ", ".join(f"{t:g}" for t in d.at)
        case = f" ({p.case_id})" if p.case_id else ""
        click.echo(
            inert(
                f"  {p.run_id}{case}: reference {p.reference:.2f}, candidate {p.candidate:.2f} "
                f"(disagree at {at}) — {p.reason}"
            )
        )
    more = len(report.disagreements) - SHOWN_DISAGREEMENTS
    if more > 0:
        click.echo(f"  … and {more} more (--json lists them all)")


def _threshold_row(s: AtThreshold) -> list[str]:
    rates = (s.agreement, s.false_pass_rate, s.false_fail_rate, s.precision)
    agreement, false_pass, false_fail, precision = map(fmt_rate, rates)
    kept_bad = [fmt_rate(v) for v in s.kept_bad.values()]
    kappa, bits = _f(s.kappa), _f(s.bits, 3)
    return [f"{s.threshold:.2f}", agreement, kappa, false_pass, false_fail, precision, bits, *kept_bad]
