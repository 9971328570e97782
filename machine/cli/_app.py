"""The ``machine`` command group. Commands are thin: parse, call the library, render.

Each command's module is imported only when that command runs (or its own help is asked for): the group
knows the commands by name, with the one line ``machine --help`` lists for each, so the listing loads
nothing but click.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import click

from ._stop import INTERRUPTED, end, stop_status
from ._usage import UsageRefused, unknown_command
from ._workspace_option import store_option, workspace_option

COMMANDS: dict[str, tuple[str, str, str]] = {
    "list": ("_machines", "list_machines_command", "List the workspace's machines."),
    "show": ("_machines", "show", "Show a machine: intent, model, tools, criteria and graders."),
    "tree": ("_machines", "tree", "Show a machine family: what each machine inherits and adds."),
    "run": ("_runs", "run", "Run a machine on INPUT, or talk to it in the terminal."),
    "runs": ("_runs", "runs", "List a machine's newest runs."),
    "show-run": ("_runs", "show_run", "Show a stored run whole: steps, scorecard reasons, tags."),
    "tagged": ("_tagging", "tagged_command", "List the runs a person marked good, bad or corrected."),
    "data": ("_tagging", "data_command", "Show where the runs are kept and how many are marked."),
    "observe": ("_tagging", "observe_command", "Keep or stop keeping the runs outside hosts make."),
    "observed": ("_tagging", "observed_command", "List the runs outside hosts made through serve."),
    "fork": ("_tagging", "fork_command", "Run the newest observed run again with a correction."),
    "correction": ("_tagging", "correction_command", "Run a stored run again with a correction."),
    "eval": ("_runs", "eval_run", "Grade a stored run with the machine's current rubric."),
    "suite": ("_suite", "suite", "Run and grade every case of a machine, --trials times each."),
    "converse": (
        "_converse",
        "converse_command",
        "Hold one conversation between a machine and its counterpart.",
    ),
    "compare": ("_compare", "compare_command", "Compare the working tree's machine with a git revision's."),
    "agree": ("_agree", "agree_command", "Measure how well a candidate grader agrees with another."),
    "versions": ("_versions", "versions_command", "List a machine's versions."),
    "propose": ("_versions", "propose_command", "Make a pending candidate and measure it on held-out cases."),
    "optimize": (
        "_optimize",
        "optimize_command",
        "Search for better instructions with the optimizer machine.",
    ),
    "train": ("_train", "train_command", "Fine-tune a machine's model on its good runs."),
    "training": ("_training", "training_group", "List training records, or show one with its loss."),
    "specialize": ("_specialize", "specialize_command", "Have the author machine write a child machine."),
    "draft-rubric": ("_specialize", "draft_rubric_command", "Have the author machine draft a rubric."),
    "trust": ("_trust", "trust_command", "Review the code a model wrote for a machine, and trust it."),
    "commit": ("_versions", "commit_command", "Make the newest pending candidate live, if it passed."),
    "revert": ("_versions", "revert_command", "Make an earlier version live again."),
    "export": ("_export", "export_command", "Write a machine's good runs as chat JSONL for fine-tuning."),
    "import": ("_import", "import_command", "Store Inspect logs, chat JSONL or OTLP traces as runs."),
    "serve": ("_serve", "serve_command", "Serve the workspace's machines to an agent host over MCP."),
    "store": ("_store", "store_group", "Copy a workspace's runs between stores (SQLite, PostgreSQL)."),
    "dashboard": ("_dashboard", "dashboard_command", "Watch runs, scores, spend and training in a browser."),
    "machinist": ("_machinist", "machinist_command", "Talk to the machinist, which improves your machines."),
    "completion": (
        "_complete",
        "completion_command",
        "Print the script that completes commands and names in SHELL.",
    ),
}
"""Each command by name: the module that defines it, its name there, and its line in the listing."""


class _Commands(click.Group):
    """The command group: commands loaded by name when they run, and every command stopped from outside
    (Ctrl-C, a closed pipe) ended quietly: a short line and the conventional exit status instead of a
    traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = COMMANDS.get(cmd_name)
        if found is None:
            return None
        module, attribute, _line = found
        command: click.Command = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
        if command.epilog is None:
            from ._help_examples import epilog

            command.epilog = epilog(cmd_name)
            for sub in getattr(command, "commands", {}).values():  # a group's: its own, its subcommands'
                sub.epilog = sub.epilog or command.epilog
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and args[0] not in COMMANDS:
            from ._shorthand import machine_names

            machines = machine_names(ctx, args[1:])
            if args[0] in machines:  # `machine NAME ...` is `machine run NAME ...`
                return super().resolve_command(ctx, ["run", *args])
            ctx.fail(unknown_command(args[0], [*COMMANDS, *machines]))
        return super().resolve_command(ctx, args)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            raise UsageRefused(error) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing, from the lines above: no command's module is imported to show it."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageRefused:
            raise
        except click.ClickException as error:
            raise UsageRefused(error) from None
        except BaseException as error:
            status = stop_status(error)
            if status is None:
                raise
            end(status, ["interrupted"] if status == INTERRUPTED else [])


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib import metadata

    try:
        version = metadata.version("machine")
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    click.echo(f"machine {version}")
    ctx.exit()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print the version and exit.",
)
@workspace_option
@store_option
def cli() -> None:
    """Small agent loops with a rubric: run machines, grade their runs, measure them.

    `machine NAME [INPUT] [OPTIONS]`, where NAME is a machine and no command, is short for `machine run
    NAME [INPUT] [OPTIONS]`: it talks to the machine in the terminal, or runs it once on INPUT."""


def main() -> None:
    """The console script. ``NO_COLOR`` (any value) turns colour off everywhere (no-color.org); off a
    terminal click leaves it out by itself."""
    cli(prog_name="machine", color=False if os.environ.get("NO_COLOR") else None)
