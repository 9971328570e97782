"""Options shared by the commands, and the one place that builds a command's workspace from them.

It is also where a command's spending is logged, through the same ``Spend`` as the MCP server and to the
same ``.machine/spending.jsonl``: ``workspace_from`` opens the spend when it builds a workspace with a
budget (every command that can spend), and ``handle_errors``, around every command, settles it once the
command is done. No command does either itself.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

import machine.ops as ops  # what spends (the policy, the spend, a harness) loads only for a command that can
import machine.runs as on_run  # what only an error needs (mask_passwords) loads with the first error
from machine.budget import Budget, parse_budget, price_of
from machine.errors import FACE_SPELLING, BadInputError, Fix, MachineError, WorkFailed
from machine.ops import open_workspace
from machine.runs import inert

from ._stop import end, stop_status, stopped_word
from ._workspace_option import with_workspace as with_workspace
from ._workspace_option import workspace_option as workspace_option

if TYPE_CHECKING:
    from machine.ops import Spend
    from machine.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])

_SPEND_KEY = "machine.spend"  # in click's ctx.meta, shared by every context of one invocation


def executor_options(fn: F) -> F:
    """``--executor`` and ``--ray-address``: where a command's runs are made."""
    return _apply(
        fn,
        [
            click.option(
                "--executor",
                type=click.Choice(["local", "ray"]),
                default="local",
                show_default=True,
                help="Where runs are made: here, or on a Ray cluster's workers (graded, charged and stored "
                "here).",
            ),
            click.option(
                "--ray-address",
                default=None,
                metavar="HOST:PORT",
                help="The Ray cluster's head for --executor ray (default: $RAY_ADDRESS, else the local "
                "cluster).",
            ),
        ],
    )


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
                help="echo, scripted, tinker, openrouter, fx, openai, opencode, pi or local "
                "(default: $MACHINE_HARNESS, else local for a local: model, else tinker).",
            ),
            click.option(
                "--script",
                type=click.Path(),
                default=None,
                metavar="FILE|DIR",
                help="The script file the scripted harness replays; a folder: each machine replays its "
                "own DIR/<machine>/script.json (--script machines). Default: $MACHINE_SCRIPT.",
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


def workspace_root_option(ctx: click.Context) -> str | None:
    """The ``--workspace`` folder given, which must exist."""
    root: str | None = (ctx.find_root().obj or {}).get("workspace")
    if root is not None and not Path(root).is_dir():
        raise BadInputError(
            f"workspace {root} is not a folder", fixes=[Fix("workspace", "DIR", "(a folder that exists)")]
        )
    return root


def workspace_from(ctx: click.Context, **options: Any) -> Workspace:
    """The workspace for this invocation, with its harness, budget and judges as the options say."""
    root = workspace_root_option(ctx)
    if "budget" not in options:
        return open_workspace(root)
    budget = Budget(parse_budget(options["budget"]))
    if options.get("price_as"):
        if price_of(options["price_as"]) is None:
            raise BadInputError(
                f"--price-as {options['price_as']!r} has no listed price either: name a model in the "
                "pricing table, such as the checkpoint's base model (e.g. Qwen/Qwen3.8-27B)"
            )
        budget.price_as[options.get("model") or "*"] = options["price_as"]
    ws = open_workspace(
        root,
        budget=budget,
        effort=options.get("effort"),
        judge_model=options.get("judge_model"),
        judge_effort=options.get("judge_effort"),
        keep_sandboxes=bool(options.get("keep_sandbox")),
    )
    if "harness" in options:  # made now, so a missing key or program is reported before any run
        name = ctx.params.get("name")
        harness = ops.harness_for(
            ws,
            name if isinstance(name, str) else None,
            harness=options["harness"] or None,
            model=options.get("model") or None,
            script=options.get("script"),
            base_url=options.get("base_url"),
        )
        if options.get("script") and harness.name != "scripted":
            raise BadInputError(
                f"--script is replayed by the scripted harness only, and these runs use the {harness.name} "
                "harness, which would ignore it: leave --script out",
                fixes=[Fix("harness", "scripted", "to replay the script")],
            )
        ws = ws.using(harness=harness)
    ws.store.ready_to_write()  # a damaged or read-only store is refused before anything is spent
    policy = ops.SpendingPolicy.from_env(log=ops.WorkspaceSpendingLog(ws))
    command = ctx.command.name or ctx.info_name or "machine"
    typed = f"machine {command} --budget {'none' if budget.usd is None else f'{budget.usd:g}'}"
    ctx.meta[_SPEND_KEY] = ops.Spend.by_command(
        policy, budget, command=command, machine=ctx.params.get("name"), typed=typed
    )
    if "executor" in options:
        ws = _elsewhere(ctx, ws, options)
    return ws


def spend_id(ctx: click.Context) -> str | None:
    """The correlation id of the spend ``workspace_from`` opened for this invocation, if any."""
    spend: Spend | None = ctx.meta.get(_SPEND_KEY)
    return spend.correlation_id if spend is not None else None


def _elsewhere(ctx: click.Context, ws: Workspace, options: dict[str, Any]) -> Workspace:
    """``ws`` making its runs where ``--executor`` says (started now, closed with the command)."""
    given: int | None = ctx.params.get("concurrency")
    concurrency = given or getattr(ctx.params.get("options"), "concurrency", None)
    executor = ops.executor_for(
        ws,
        options["executor"],
        address=options.get("ray_address"),
        concurrency=concurrency,
        harness=ws.harness.name,
        script=options.get("script"),
        base_url=options.get("base_url"),
    )
    if executor is None:
        return ws
    ctx.call_on_close(executor.close)
    return ws.using(executor=executor)


def _settle_spend(*, finished: bool) -> None:
    """Settle the spend ``workspace_from`` opened in this invocation, if any (see ``Spend.settle``)."""
    spend = _opened_spend()
    if spend is not None:
        spend.settle(finished=finished)


def _opened_spend() -> Spend | None:
    ctx = click.get_current_context(silent=True)
    spend: Spend | None = ctx.meta.pop(_SPEND_KEY, None) if ctx is not None else None
    return spend


def _settle_failed(error: BaseException) -> Spend | None:
    """A command failed: say what it spent if it did any work, and settle the spend without letting a
    second failure (a full disk under the spending log) take the place of the first."""
    spend = _opened_spend()
    if spend is None:
        return None
    if isinstance(error, MachineError) and (isinstance(error, WorkFailed) or spend.budget.spent > 0):
        print_spend(spend.budget)
    try:
        spend.settle(finished=False)
    except MachineError as second:
        if isinstance(error, MachineError):
            error.message = f"{error.message}; and {second.message}"
        else:
            error.add_note(second.message)
    return spend


def print_spend(budget: Any) -> None:
    """Every command that can spend says what it spent, on stderr so --json output stays clean."""
    click.echo(budget.describe(), err=True)


COMMANDS = {
    "suite": "machine suite {machine}",
    "run": "machine run {machine} INPUT",
    "propose": "machine propose {machine} --model MODEL",
    "record": "machine versions {machine} --record",
    "correction": "machine correction --id ID NOTE",
}
"""The command for each operation a fix can name."""
FLAGS = {"base_model": "--price-as", "run_id": "--id"}
"""Operation arguments that the command line names otherwise."""


def cli_spelling(fix: Fix) -> str:
    """``--force``, ``--budget USD``, ```machine suite NAME --trials 4```: how the command line does it."""
    if fix.operation:
        command = COMMANDS.get(fix.operation, "machine " + fix.operation + " {machine}")
        command = command.format(machine=fix.machine or "NAME")
        for argument, value in fix.arguments:
            command = _with_flag(command, argument, value)
        return f"`{command}`"
    return f"pass {_flag(fix.argument, fix.value)}"


def _flag(argument: str, value: str | None) -> str:
    flag = FLAGS.get(argument, "--" + argument.replace("_", "-"))
    return flag if value is None else f"{flag} {value}"


def _with_flag(command: str, argument: str, value: str | None) -> str:
    """``command`` given the argument: in place of its example (``--model MODEL``), else at its end."""
    words = command.split(" ")
    flag = _flag(argument, None)
    if flag not in words:
        return f"{command} {_flag(argument, value)}"
    at = words.index(flag)
    example = at + 1 < len(words) and words[at + 1].replace("_", "").isupper()
    words[at : at + (2 if example else 1)] = _flag(argument, value).split(" ", 1)
    return " ".join(words)


def fail(error: MachineError) -> None:
    """The error in one line on stderr, with each fix as a flag, and exit status 2. A PostgreSQL password
    in it (a store's location the user gave) is masked, whichever message named it."""
    click.echo(f"error: {inert(on_run.mask_passwords(error.explain(cli_spelling)))}", err=True)
    sys.exit(2)


def handle_errors(fn: F) -> F:
    """Turn the library's errors into one clear line and exit status 2; nothing else is printed.

    Around every command, it also settles the command's spend (``_settle_spend``) once the command is done;
    a command that fails after spending (or after doing work, ``WorkFailed``) still says what it spent, and
    one stopped from outside (Ctrl-C, a closed pipe) ends quietly, saying what it spent. While it runs, the
    library spells the fixes in its reports as flags (``FACE_SPELLING``), which a person can paste.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        spelling = FACE_SPELLING.set(cli_spelling)
        try:
            return _handled(fn, *args, **kwargs)
        finally:
            FACE_SPELLING.reset(spelling)

    return wrapper  # type: ignore[return-value]


def _handled(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` called as ``handle_errors`` says."""
    try:
        try:
            result = fn(*args, **kwargs)
        except BaseException as error:
            spend = _settle_failed(error)
            status = stop_status(error)
            if status is None:
                raise
            spent = [] if spend is None else [spend.budget.describe()]
            end(status, stopped_word(status) + spent)
        _settle_spend(finished=True)
        return result
    except MachineError as error:
        fail(error)
