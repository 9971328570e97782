"""The ``machine serve`` MCP server: list, show and recent runs (read-only); rehearse (spends); specialize,
optimize and train (spend, and write a child machine or a pending candidate); commit and revert (change
the live version). The tools are in ``_tools`` and ``_learn_tools``, what they do in ``_service``.

Spending and changing tools run only with the person's consent through a channel the model cannot forge
(``machine.ops.SpendingPolicy``): the host's form when the client declares elicitation, else the allowance
the person set in the server's own configuration (``MACHINE_ALLOW_SPEND_USD``), which also authorises the
changing tools (they reserve $0 of it); with neither, the tool refuses and says how to allow it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from machine.ops import SpendingPolicy
from machine.workspace import Workspace

from ._learn_tools import register_learning
from ._service import MachineServer, Service
from ._tools import register
from ._trust_tools import register_trust


def build_server(
    workspace: Workspace | str | Path | None = None,
    *,
    harness: str | None = None,
    script: str | Path | None = None,
    policy: SpendingPolicy | None = None,
    token_verifier: Any = None,
    auth: Any = None,
) -> MCPServer:
    """The ``machine serve`` MCP server over ``workspace`` (default: ``$MACHINE_WORKSPACE``, else the current
    folder). ``harness``/``script`` are the default harness of spending tools (as the CLI's options);
    ``policy`` defaults to ``SpendingPolicy.from_env`` logging to ``.machine/spending.jsonl``."""
    service = Service(workspace, harness=harness, script=script, policy=policy)
    server = MachineServer(service, token_verifier=token_verifier, auth=auth)
    register(server)
    register_learning(server)
    register_trust(server)
    return server
