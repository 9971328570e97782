"""Options shared by the commands, and the one place that builds a Workspace from them."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .._errors import BadInputError

F = TypeVar("F", bound=Callable[..., Any])


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
                help="echo, scripted, tinker, openrouter or openai (default: $MACHINE_HARNESS, else tinker).",
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
                help="The harness's endpoint (required by openai; replaces Tinker's or OpenRouter's URL).",
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
    return Workspace(
        root,
        harness=harness,
        budget=budget,
        effort=options.get("effort"),
        judge_model=options.get("judge_model"),
        judge_effort=options.get("judge_effort"),
        keep_sandboxes=bool(options.get("keep_sandbox")),
    )


def print_spend(budget: Any) -> None:
    """Every command that can spend says what it spent, on stderr so --json output stays clean."""
    click.echo(budget.describe(), err=True)


def handle_errors(fn: F) -> F:
    """Turn the library's errors into one clear line and exit status 2; nothing else is printed."""
    from .._errors import MachineError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MachineError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]
