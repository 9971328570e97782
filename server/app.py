"""The ``machine serve`` MCP server: list, show and recent runs (read-only); rehearse (spends); specialize,
optimize and train (spend, and write a child machine or a pending candidate); commit and revert (change
the live version). The tools are in ``_tools`` and ``_learn_tools``, what they do in ``_service``.

Spending and changing tools run only with the person's consent through a channel the model cannot forge
(``machine.ops.SpendingPolicy``): the host's form when the client declares elicitation, else the allowance
the person set in the server's own configuration (``MACHINE_ALLOW_SPEND_USD``), which also authorises the
changing tools (they reserve $0 of it); with neither, the tool refuses and says how to allow it.

Building the server imports only the SDK and ``_server``: the tools (and the learning layer, the measuring
and the result models they bring) are registered on the first ``tools/list`` or ``tools/call``, and the
workspace is opened on the first call, so a host's ``initialize`` is answered as fast as the SDK allows.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machine.errors import MachineError

from ._server import MachineServer

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from machine.ops import SpendingPolicy
    from machine.runs import EditMode
    from machine.workspace import Workspace

    from ._service import Service

log = logging.getLogger("machine.server")


def build_server(
    workspace: Workspace | str | Path | None = None,
    *,
    harness: str | None = None,
    script: str | Path | None = None,
    policy: SpendingPolicy | None = None,
    token_verifier: Any = None,
    auth: Any = None,
    log_level: str = "INFO",
    trust_over_mcp: bool = True,
    project: str | Path | None = None,
    edits: EditMode = "ask",
) -> MachineServer:
    """The ``machine serve`` MCP server over ``workspace`` (default: ``$MACHINE_WORKSPACE``, else the current
    folder). ``harness``/``script`` are the default harness of spending tools (as the CLI's options);
    ``policy`` defaults to ``SpendingPolicy.from_env`` logging to ``.machine/spending.jsonl``;
    ``log_level`` is the least a record must be to be logged where no logging is set up yet (an
    in-process server under a chat logs only warnings). ``trust_over_mcp=False`` leaves trust_machine
    out (neither listed nor callable): a client that answers the host's form by itself would trust on
    the person's behalf, so they may keep trusting to a terminal. ``project``: a folder ask_machine's
    runs work in (its real files; None: a fresh sandbox per run), each change made as ``edits`` says
    (``_edits``: ask through the host's form, auto, deny)."""

    def make_service() -> Service:
        from ._edits import ProjectEdits
        from ._service import Service, tool_error

        place = ProjectEdits(Path(project).resolve() if project is not None else None, edits)
        try:
            return Service(
                workspace,
                harness=harness,
                script=script,
                policy=policy,
                trust_over_mcp=trust_over_mcp,
                edits=place,
            )
        except MachineError as error:  # an unusable allowance, say: every call says so, and the log
            log.error("machine serve cannot serve this workspace: %s", error)
            raise tool_error(error) from error

    return MachineServer(
        make_service,
        add_tools if trust_over_mcp else functools.partial(add_tools, trust=False),
        trust_over_mcp=trust_over_mcp,
        token_verifier=token_verifier,
        auth=auth,
        log_level=log_level,
    )


def add_tools(server: MCPServer, *, trust: bool = True) -> None:
    """Register every tool, resource and prompt on ``server``, importing their modules only now
    (``trust=False``: every one but trust_machine)."""
    from ._ask_tool import register_ask
    from ._learn_tools import register_learning
    from ._resources import register_resources
    from ._tools import register
    from ._trust_tools import register_trust

    register(server)
    register_ask(server)
    register_learning(server)
    if trust:
        register_trust(server)
    if isinstance(server, MachineServer):
        register_resources(server)
