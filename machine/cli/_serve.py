"""``machine serve``: the MCP server for agent hosts, over stdio or streamable HTTP.

The ``mcp`` SDK is imported only when the command runs, so ``machine --help`` stays fast; and the command
imports neither the operations nor the options of the other commands, so a host's ``initialize`` is
answered soon after the interpreter starts.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from machine.errors import BadInputError, MachineError

from ._stop import INTERRUPTED, end, stop_status
from ._workspace_option import with_workspace

F = TypeVar("F", bound=Callable[..., Any])
EDIT_MODES = ("ask", "auto", "deny")
"""``machine.runs.EDIT_MODES``, spelt here: the command imports nothing of the core before it serves."""
SAID = {
    "ask": "each change is put to you through the host's form first, and refused where the host cannot ask",
    "auto": "their changes are made unasked (--edits auto)",
    "deny": "every change is refused (--edits deny)",
}


def handle_errors(fn: F) -> F:
    """The library's errors as one line and exit status 2, as every command says them (the shared
    spelling of fixes is imported only for an error); a stop from outside ends quietly. This command
    spends nothing itself (its tools settle their own spends), so it needs none of the shared handler's
    spending."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MachineError as error:
            from ._options import fail

            fail(error)
        except BaseException as error:
            status = stop_status(error)
            if status is None:
                raise
            end(status, ["interrupted"] if status == INTERRUPTED else [])

    return wrapper  # type: ignore[return-value]


@click.command("serve")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--host",
    default=None,
    metavar="HOST",
    help="The address to listen on with --http (default 127.0.0.1; only name another on purpose).",
)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    help="The port with --http (default 8765; 0 picks a free one and prints it).",
)
@click.option(
    "--harness",
    default=None,
    help="The harness rehearse uses by default: echo, scripted, tinker, openrouter, fx, openai, opencode, pi "
    "or local "
    "(default: $MACHINE_HARNESS, else local for a local: model, else tinker).",
)
@click.option(
    "--script",
    type=click.Path(dir_okay=False),
    default=None,
    help="The script file the scripted harness replays.",
)
@click.option(
    "--print-config",
    "print_config",
    type=click.Choice(["claude-desktop", "cursor", "opencode"]),
    default=None,
    metavar="HOST",
    help="Print the configuration HOST (claude-desktop, cursor or opencode) needs to start this server "
    "with these options, and exit.",
)
@click.option(
    "--no-trust-over-mcp",
    "no_trust",
    is_flag=True,
    help="Leave out trust_machine: code a model wrote is then trusted only with `machine trust` in a "
    "terminal (a host that answers its form by itself would trust on your behalf).",
)
@click.option(
    "--edits",
    type=click.Choice(EDIT_MODES),
    default="ask",
    show_default=True,
    help="Started inside a project folder, ask_machine's runs work on that project's files: ask puts "
    "each change (its diff, or the command) to you through the host's form and makes it only after your "
    "yes, and refuses every change where the host cannot ask; auto is your allowance for edits, made "
    "unasked; deny refuses them all.",
)
@with_workspace
@click.pass_context
@handle_errors
def serve_command(
    ctx: click.Context,
    /,
    use_http: bool,
    host: str | None,
    port: int | None,
    harness: str | None,
    script: str | None,
    print_config: str | None,
    no_trust: bool,
    edits: str,
) -> None:
    """Serve this workspace's machines to an agent host over MCP (stdio by default).

    Tools: list_machines, show_machine, recent_runs, show_run, show_training, plan_training (read-only);
    rehearse, ask_machine, specialize, optimize, train, smoke_training (spend, each needs budget_usd);
    commit, revert and trust_machine (change what is live or trusted; --no-trust-over-mcp leaves
    trust_machine out). Resources machine://machines,
    machines/NAME, runs/ID and training/ID; prompts improve_machine, specialize_machine, explain_run.
    Spending and changing tools run only with your consent: the host asks you (MCP elicitation), or
    MACHINE_ALLOW_SPEND_USD in the server's env is an allowance (a running total in USD; it also
    authorises commit and revert). Over HTTP every request needs "Authorization: Bearer TOKEN":
    MACHINE_SERVER_TOKEN, else a token printed once at start. ask_machine's runs are kept only while
    the workspace observes (machine observe on).

    Started inside a project folder (not the workspace, your home folder or the root), ask_machine's
    runs work on that project's real files, each change as --edits says: asked through the host's form
    (ask, the default; a host without forms has every change refused), made unasked (auto), or refused
    (deny). In the workspace itself each run gets a fresh sandbox.

    \b
    Examples:
      machine serve --print-config claude-desktop
      machine serve --http --port 0
    """
    if not use_http and (host is not None or port is not None):
        raise BadInputError("--host and --port are for --http; stdio needs neither")
    root = (ctx.find_root().obj or {}).get("workspace")
    if root is not None and not Path(root).is_dir():
        raise BadInputError(f"workspace {root} is not a folder; pass --workspace DIR with an existing folder")
    if script is not None and not Path(script).is_file():
        raise BadInputError(f"--script {script} is not a file")
    if print_config is not None:
        from ._serve_config import printed

        text, note = printed(
            print_config, Path(root or "."), harness, script, trust=not no_trust, edits=edits
        )
        click.echo(text)
        click.echo(note, err=True)
        return
    _module("serve").log_to_stderr()
    built: dict[str, Any] = {"harness": harness, "script": script, "trust_over_mcp": not no_trust}
    built |= {"project": _project(root, edits), "edits": edits}
    if use_http:
        _serve_http(root, host or "127.0.0.1", DEFAULT_PORT if port is None else port, built)
    else:
        _module("app").build_server(root, **built).run("stdio")


DEFAULT_PORT = 8765


def _project(root: str | None, edits: str) -> Path | None:
    """The folder ask_machine's runs work in, said on stderr: the one the server is started in, unless
    it is the workspace itself (a fresh sandbox per run), or the home folder or the root, which hold far
    more than a project (a host may well start its servers there)."""
    here = Path.cwd().resolve()
    workspace = Path(root or os.environ.get("MACHINE_WORKSPACE") or here).resolve()
    if here == workspace:
        return None
    if here in (Path.home().resolve(), Path(here.anchor)):
        click.echo(
            f"machine serve: started in {here}, your whole home folder (or the root), so ask_machine's runs "
            "each get a fresh sandbox; start it inside a project folder to work on that project's files",
            err=True,
        )
        return None
    click.echo(
        f"machine serve: ask_machine's runs work on the real files of {here}, not on a copy: {SAID[edits]}",
        err=True,
    )
    return here


def _module(name: str) -> Any:
    """``machine.server.NAME``, imported only now (it imports the ``mcp`` SDK)."""
    import importlib

    return importlib.import_module(f"machine.server.{name}")


def _serve_http(root: Any, host: str, port: int, built: dict[str, Any]) -> None:
    import anyio

    serve = _module("serve")
    build_server = _module("app").build_server
    http_auth, serve_http, token_from_env = serve.http_auth, serve.serve_http, serve.token_from_env

    def echo(text: str) -> None:
        click.echo(text, err=True)

    token = token_from_env(echo)
    verifier, auth = http_auth(token, host, port)
    server = build_server(root, token_verifier=verifier, auth=auth, **built)
    serve.warn_if_exposed(host, echo)

    def ready(url: str) -> None:
        echo(f"machine serve: MCP over streamable HTTP at {url}")

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the server quietly
        anyio.run(lambda: serve_http(server, host=host, port=port, on_ready=ready))
