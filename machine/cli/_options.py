"""Options shared by the commands, and the one place that builds a Workspace from them.

It is also the one place where a command's spending is logged, through the same ``SpendingPolicy`` as the
MCP server and to the same ``.machine/spending.jsonl``: ``workspace_from`` opens the spend when it builds a
Workspace with a budget (every command that can spend: run, suite, converse, compare, eval, agree,
propose), and ``handle_errors``, around every command, settles it once the command is done. No command
does either itself.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .._errors import BadInputError

if TYPE_CHECKING:
    from .._budget import Budget
    from .._policy import SpendingPolicy

F = TypeVar("F", bound=Callable[..., Any])

_SPEND_KEY = "machine.spend"  # in click's ctx.meta, shared by every context of one invocation


def _remember_workspace(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--workspace`` may stand before the command or after its arguments; the later one wins."""
    if value is not None:
        ctx.ensure_object(dict)
        root = ctx.find_root()
        root.ensure_object(dict)
        root.obj["workspace"] = value
    return value


workspace_option = click.option(
    "--workspace",
    metavar="DIR",
    default=None,
    expose_value=False,
    callback=_remember_workspace,
    is_eager=True,
    help="The workspace folder (default: $MACHINE_WORKSPACE, else the current directory).",
)


def with_workspace(fn: F) -> F:
    return workspace_option(fn)


def _apply(fn: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        fn = option(fn)
    return fn


def grading_options(fn: F) -> F:
    """Options of every command that may spend: the budget, pricing and the judges."""
    return _apply(
        fn,
        [
            click.option(
                "--budget",
                default="1",
                show_default=True,
                metavar="USD|none",
                help="Stop starting new work once this much is spent; 'none' lifts the cap.",
            ),
            click.option(
                "--price-as",
                "price_as",
                default=None,
                metavar="MODEL",
                help="Charge a model with no listed price (a fine-tuned checkpoint) at this model's price.",
            ),
            click.option(
                "--judge-model",
                default=None,
                metavar="MODEL",
                help="The judges' model (default: $MACHINE_JUDGE_MODEL, else Inkling-Small).",
            ),
            click.option(
                "--judge-effort",
                default=None,
                metavar="EFFORT",
                help="The judges' reasoning effort (default medium).",
            ),
        ],
    )


def spending_options(fn: F) -> F:
    """Options of every command that runs a machine: harness, model, effort, plus the grading options."""
    return _apply(
        fn,
        [
            click.option(
                "--harness",
                default=None,
                help="echo, scripted, tinker, openrouter, openai, opencode or pi "
                "(default: $MACHINE_HARNESS, else tinker).",
            ),
            click.option(
                "--script",
                type=click.Path(dir_okay=False),
                default=None,
                help="The script file the scripted harness replays.",
            ),
            click.option(
                "--base-url",
                default=None,
                metavar="URL",
                help="The harness's endpoint (required by openai; replaces Tinker's or OpenRouter's URL; "
                "opencode and pi send the model to this OpenAI-compatible endpoint).",
            ),
            click.option("--model", default=None, help="Run with this model instead of the machine's."),
            click.option(
                "--effort",
                default=None,
                metavar="EFFORT",
                help="Reasoning effort: none, minimal, low, medium, high, xhigh, or a number in [0, 0.99].",
            ),
            click.option(
                "--keep-sandbox", is_flag=True, help="Keep each run's sandbox folder for debugging."
            ),
            grading_options,
        ],
    )


def workspace_from(ctx: click.Context, **options: Any) -> Any:
    """The Workspace for this invocation, with its harness, budget and judges as the options say."""
    from .._budget import Budget, parse_budget
    from .._workspace import Workspace

    root = (ctx.find_root().obj or {}).get("workspace")
    if root is not None and not Path(root).is_dir():
        raise BadInputError(f"workspace {root} is not a folder; pass --workspace DIR with an existing folder")
    if "budget" not in options:
        return Workspace(root)
    budget = Budget(parse_budget(options["budget"]))
    if options.get("price_as"):
        from .._pricing import price_of

        if price_of(options["price_as"]) is None:
            raise BadInputError(
                f"--price-as {options['price_as']!r} has no listed price either: name a model in the "
                "pricing table, such as the checkpoint's base model (e.g. Qwen/Qwen3.8-27B)"
            )
        budget.price_as[options.get("model") or "*"] = options["price_as"]
    harness = None
    if "harness" in options:
        from machine.clients import make_harness

        harness = make_harness(
            options["harness"], script=options.get("script"), base_url=options.get("base_url")
        )
    ws = Workspace(
        root,
        harness=harness,
        budget=budget,
        effort=options.get("effort"),
        judge_model=options.get("judge_model"),
        judge_effort=options.get("judge_effort"),
        keep_sandboxes=bool(options.get("keep_sandbox")),
    )
    _open_spend(ctx, ws.data_dir / "spending.jsonl", budget)
    return ws


@dataclass
class _Spend:
    policy: SpendingPolicy
    correlation_id: str
    budget: Budget


def _open_spend(ctx: click.Context, log_path: Path, budget: Budget) -> None:
    """Record the person's consent to this command's spending: typing the command is the consent.

    The cap per call (``MACHINIST_MAX_BUDGET``, $10) is for tools a model calls; the person's own
    ``--budget`` on the command line is not held to it, so it goes into the log uncapped (``capped=False``).
    """
    from .._policy import SpendingPolicy

    policy = SpendingPolicy.from_env(log_path)
    command = ctx.command.name or ctx.info_name or "machine"
    cap = "none" if budget.usd is None else f"{budget.usd:g}"
    correlation_id, _ = policy.consented(
        "command",
        f"machine {command} --budget {cap}",
        budget_usd=budget.usd,
        tool=command,
        machine=ctx.params.get("name"),
        capped=False,
    )
    ctx.meta[_SPEND_KEY] = _Spend(policy, correlation_id, budget)


def _settle_spend(*, finished: bool) -> None:
    """Write the spending log line of the spend ``workspace_from`` opened in this invocation, if any.

    The line is written when the command finished (even at $0: an echo or scripted run, or judges that
    were not needed) or when it spent anything however it ended (a failure or Ctrl-C midway still logs
    what was spent). A command that failed before spending anything (bad input, an unknown machine, a
    refusal) writes nothing.
    """
    ctx = click.get_current_context(silent=True)
    spend = ctx.meta.pop(_SPEND_KEY, None) if ctx is not None else None
    if not isinstance(spend, _Spend):
        return
    spent = spend.budget.spent
    if finished or spent > 0:
        spend.policy.settle(spend.correlation_id, spent_usd=spent)


def print_spend(budget: Any) -> None:
    """Every command that can spend says what it spent, on stderr so --json output stays clean."""
    click.echo(budget.describe(), err=True)


def handle_errors(fn: F) -> F:
    """Turn the library's errors into one clear line and exit status 2; nothing else is printed.

    Around every command, it also settles the command's spend (``_settle_spend``) once the command is done.
    """
    from .._errors import MachineError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                _settle_spend(finished=False)
                raise
            _settle_spend(finished=True)
            return result
        except MachineError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]
