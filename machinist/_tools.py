"""The machinist's tools: ``machine serve``'s own tools, called in process through the SDK's client, so the
machinist and every MCP host go through one implementation (the same checks, reports and spending log).
The server is composed by name (``machine.server.app``, imported when a tool is first made or called), as
``machine serve`` composes it: faces do not import one another, and this is the machinist's one use of it.

Each call reaches a server over the workspace the run is in, made once per workspace, whose spending
policy is ``ConversationPolicy``: a spending or changing tool runs only in an interactive session and
only as far as the person agreed in their latest message (``_consent``), read from the conversation the
chat recorded, which the call hands the policy. A refusal says what to ask the person. Tools that show
code to the person for trust (``trust_machine``) are not the machinist's: the person trusts code with
``machine trust`` themselves.
"""

from __future__ import annotations

import contextvars
import importlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from machine.errors import ConsentRequired
from machine.ops import SpendingLog, SpendingPolicy, WorkspaceSpendingLog, open_workspace
from machine.runs import Message, Tool, ToolContext, ToolFailure

from ._consent import CHANGING, SPENDING, agreement

if TYPE_CHECKING:
    from machine.ops import Consent

READ_ONLY = ("list_machines", "show_machine", "recent_runs", "show_run", "show_training", "plan_training")
MAX_RESULT = 20_000
"""The most characters of a tool's result the model is given (the rest is cut, saying so)."""
SAID: contextvars.ContextVar[tuple[Message, ...]] = contextvars.ContextVar("machinist_said", default=())
"""The conversation of the call being made, for the policy (set by the tool, read by the server's policy)."""


class ConversationPolicy(SpendingPolicy):
    """Consent from the person's latest message: the budgets agreed there hold every call made under it
    (two calls after one "up to $2" share the $2)."""

    changes_note = ""

    def __init__(self, *, log_path: Path | None = None, log: SpendingLog | None = None) -> None:
        super().__init__(allowance=None, log_path=log_path, log=log)
        self._taken: dict[str, float] = {}
        self._guard = threading.Lock()

    def reserve(self, amount: float, *, tool: str, machine: str) -> tuple[str, Consent]:
        amount = self.check_amount(amount)
        said = SAID.get()
        agreed = agreement(said)
        quote = agreed.said.strip().replace("\n", " ")[:200]
        if tool in CHANGING:
            if not agreed.changes:
                raise ConsentRequired(_ask_change(tool, machine))
            return self.consented("conversation", f"the person wrote: {quote!r}", tool=tool, machine=machine)
        key = f"{len(said)}:{hash(agreed.said)}"
        with self._guard:
            taken = self._taken.get(key, 0.0)
            if agreed.budget_usd is None or taken + amount > agreed.budget_usd + 1e-9:
                raise ConsentRequired(_ask_budget(tool, machine, amount, agreed.budget_usd, taken))
            self._taken[key] = taken + amount
        return self.consented(
            "conversation",
            f"the person wrote: {quote!r} (up to ${agreed.budget_usd:g}; ${taken:g} of it taken before)",
            budget_usd=amount,
            tool=tool,
            machine=machine,
        )


def _ask_budget(tool: str, machine: str, amount: float, agreed: float | None, taken: float) -> str:
    if agreed is None:
        return (
            f"the person has not agreed to {tool} {machine!r}: spending needs their yes first. Tell them "
            f"what it will do and that it costs at most ${amount:g}, ask whether to go ahead, and call "
            "again after they say yes or name a budget"
        )
    return (
        f"the person agreed to at most ${agreed:g} (${taken:g} of it used), not ${amount:g} for {tool} "
        f"{machine!r}: call with budget_usd of at most ${max(agreed - taken, 0):g}, or ask them for more"
    )


def _ask_change(tool: str, machine: str) -> str:
    return (
        f"the person has not agreed to {tool} {machine!r}: say what it will change (which version goes "
        "live) and ask them; call again after they say yes"
    )


class _Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ServedTool(Tool):
    """One of ``machine serve``'s tools, as the machinist's model calls it."""

    async def invoke(self, arguments: dict[str, Any] | None, ctx: ToolContext) -> str:
        if arguments is None:
            raise ToolFailure(f"the arguments of {self.name} were not valid JSON; send a JSON object")
        if self.name in (*SPENDING, *CHANGING) and not ctx.interactive:
            raise ToolFailure(
                f"{self.name} spends or changes, so it runs only in an interactive session with the "
                "person (machine machinist), after they agreed"
            )
        from mcp import Client

        token = SAID.set(ctx.conversation)
        try:
            async with Client(_server(ctx.root)) as client:
                result = await client.call_tool(self.name, arguments)
        finally:
            SAID.reset(token)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise ToolFailure(text.removeprefix(f"Error executing tool {self.name}: "))
        shown = json.dumps(result.structured_content) if result.structured_content is not None else text
        return shown if len(shown) <= MAX_RESULT else shown[:MAX_RESULT] + f"... (cut at {MAX_RESULT} chars)"


_SERVERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _server(root: Path | None) -> Any:
    """The server over the workspace at ``root``, made once (it keeps its store and loaded machines)."""
    build_server = _app().build_server
    where = str((root or Path.cwd()).resolve())
    with _LOCK:
        if where not in _SERVERS:
            policy = ConversationPolicy(log=WorkspaceSpendingLog(open_workspace(where)))
            _SERVERS[where] = build_server(where, policy=policy)
        return _SERVERS[where]


def machinist_tools(names: Sequence[str] = (*READ_ONLY, *SPENDING, *CHANGING)) -> list[Tool]:
    """The tools ``names`` as the server lists them: their descriptions and input schemas."""
    app = _app()
    server = app.build_server(None)
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
