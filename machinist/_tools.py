"""The machinist's tools: ``machine serve``'s own tools, called in process through the SDK's client, so the
machinist and every MCP host go through one implementation (the same checks, questions, reports and
spending log). The server is composed by name (``machine.server.app``, imported when a tool is first made
or called), as ``machine serve`` composes it: faces do not import one another, and this is the machinist's
one use of it.

A spending or changing tool runs only where the run has an approver (``ToolContext.approver``): the person
at a terminal, whom the server's policy (``machine.ops.AskingPolicy``) asks its own question drawn from the
call's arguments and plan, or an allowance they typed for the session. Each approver gets a server of its
own, so its allowance is one running total, and every call spends from the session's budget as well. What
the model or the person wrote in the conversation is never consent. Tools that show code to the person
for trust (``trust_machine``) are not the machinist's: the person trusts code with ``machine trust``.
"""

from __future__ import annotations

import importlib
import json
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from machine.budget import Budget
from machine.ops import AskingPolicy, WorkspaceSpendingLog, open_workspace
from machine.runs import Approver, Tool, ToolContext, ToolFailure

from ._consent import CHANGING, SPENDING

READ_ONLY = ("list_machines", "show_machine", "recent_runs", "show_run", "show_training", "plan_training")
MAX_RESULT = 20_000
"""The most characters of a tool's result the model is given (the rest is cut, saying so)."""
NOBODY = Approver()
"""The approver of a run nobody can approve for (a suite, a script): its server refuses every spend."""


class _Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ServedTool(Tool):
    """One of ``machine serve``'s tools, as the machinist's model calls it."""

    async def invoke(self, arguments: dict[str, Any] | None, ctx: ToolContext) -> str:
        if arguments is None:
            raise ToolFailure(f"the arguments of {self.name} were not valid JSON; send a JSON object")
        approver = ctx.approver or NOBODY
        if self.name in (*SPENDING, *CHANGING) and not approver.can_approve:
            raise ToolFailure(
                f"{self.name} spends or changes, so it runs only where the person can approve it: at a "
                "terminal, where the program asks them, or within an allowance they gave the session. "
                "Nothing was spent or changed."
            )
        from mcp import Client

        async with Client(_server(ctx.root, approver, ctx.budget)) as client:
            result = await client.call_tool(self.name, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise ToolFailure(text.removeprefix(f"Error executing tool {self.name}: "))
        shown = json.dumps(result.structured_content) if result.structured_content is not None else text
        return shown if len(shown) <= MAX_RESULT else shown[:MAX_RESULT] + f"... (cut at {MAX_RESULT} chars)"


_SERVERS: weakref.WeakKeyDictionary[Approver, dict[str, Any]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _server(root: Path | None, approver: Approver, within: Budget | None) -> Any:
    """The server over the workspace at ``root`` for ``approver``'s session, made once (it keeps its
    store, its loaded machines and the running total of the allowance)."""
    build_server = _app().build_server
    where = str((root or Path.cwd()).resolve())
    with _LOCK:
        servers = _SERVERS.setdefault(approver, {})
        if where not in servers:
            log = WorkspaceSpendingLog(open_workspace(where))
            policy = AskingPolicy(approver, within=within if approver is not NOBODY else None, log=log)
            servers[where] = build_server(where, policy=policy, log_level="WARNING")
        return servers[where]


def machinist_tools(names: Sequence[str] = (*READ_ONLY, *SPENDING, *CHANGING)) -> list[Tool]:
    """The tools ``names`` as the server lists them: their descriptions and input schemas."""
    app = _app()
    server = app.build_server(None, log_level="WARNING")
    app.add_tools(server)
    listed = {t.name: t for t in server._tool_manager.list_tools()}
    return [
        ServedTool(name, listed[name].description or name, listed[name].parameters, _no_call, _Anything, True)
        for name in names
    ]


def _app() -> Any:
    """``machine.server.app``, by name (see the module)."""
    return importlib.import_module("machine.server.app")


def _no_call(*_args: Any, **_kwargs: Any) -> str:  # ServedTool.invoke calls the server instead
    raise ToolFailure("a served tool is called through the server")
