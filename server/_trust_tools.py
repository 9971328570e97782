"""The MCP tool that trusts what a model wrote: ``trust_machine`` shows the person the code in the host's
form and records it trusted only when they approve there. No allowance, no argument and no earlier consent
stands in for them: a client that cannot ask the person cannot trust, and the tool says to run
``machine trust NAME`` in a terminal instead.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from typing import Annotated, Any

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from machine.errors import MachineError
from machine.ops import TrustReview, review, trust, untrustable
from machine.spec import show_hidden

from ._bounds import MachineName
from ._results import Approval, NotAsked
from ._server import service
from ._service import can_elicit, tool_error

MAX_QUESTION = 20_000
"""The longest question the host's form is asked: a review that would not fit is never cut (the person
would approve what they were not shown); it is refused, naming the command that shows it all."""
_REVIEWED = "machine.trust.reviewed"
IN_A_TERMINAL = "`machine trust {name}` in a terminal"
"""Where the person trusts what this host cannot show them or ask them about: the one command the server
names, because the fix lies outside the host, with the person (tests/test_messages.py allows it)."""


def trust_question(shown: TrustReview) -> str:
    """What the host's form shows the person: each file a model wrote, its state and its diff, with every
    character a reader could not see written as its escape (``\\u3164``)."""
    parts = [
        f"Trust the code a model wrote for machine {shown.machine!r}? Until you do, nothing imports it "
        "(a host may rehearse it only in the sandbox). Read it first:"
    ]
    for file in shown.pending:
        parts.append(
            show_hidden(f"\n== machines/{file.path} ({file.state}, written by {file.by})\n{file.diff}")
        )
    return "\n".join(parts) + "\nApprove only if you have read it and it does what you want."


async def ask_trust(name: MachineName, ctx: Context) -> Elicit[Approval] | NotAsked:
    if not can_elicit(ctx):
        return NotAsked(reason="the client cannot ask the person")
    try:
        shown = review(name, workspace=service(ctx).ws)
    except MachineError:
        return NotAsked(reason="bad input: the tool refuses it")
    if not shown.pending or untrustable(shown) is not None or len(trust_question(shown)) > MAX_QUESTION:
        return NotAsked(reason="nothing to ask: the tool says why")
    service(ctx).reviews[name] = shown  # what the person is shown is what is trusted, or nothing
    return Elicit(trust_question(shown), Approval)


async def trust_machine(
    name: MachineName,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_trust)],
) -> TrustReview:
    """Ask the person to read and trust the code a model wrote for machine `name` (a child written by
    specialize, a rubric draft): the host's form shows it, and it is trusted only if the person approves
    there; until then nothing imports it, and rehearse runs its own code only in the sandbox. Returns
    each file and its state."""
    state = service(ctx)
    try:
        shown = review(name, workspace=state.ws)
    except MachineError as error:
        raise tool_error(error) from error
    if not shown.pending:
        return shown
    refused = untrustable(shown)
    if refused is not None:
        raise tool_error(refused)
    if len(trust_question(shown)) > MAX_QUESTION:
        raise ToolError(
            f"what a model wrote for {name!r} is too long to show in the host's form, so it cannot be "
            f"trusted here: the person can review it all with {IN_A_TERMINAL.format(name=name)}"
        )
    _consented(consent, name)
    asked = state.reviews.pop(name, None)
    if asked is None or _hashes(asked) != _hashes(shown):
        raise ToolError(f"{name!r} changed after the person was shown it, so nothing was trusted: call again")
    try:
        async with state.lock:
            return trust(name, workspace=state.ws, reviewed=asked)
    except MachineError as error:
        raise tool_error(error) from error


def _hashes(shown: TrustReview) -> list[tuple[str, str | None]]:
    return [(f.path, f.sha256) for f in shown.files]


def _consented(outcome: Any, name: str) -> None:
    """Pass only when the person approved in the host's form."""
    if isinstance(outcome, AcceptedElicitation) and isinstance(outcome.data, Approval):
        if outcome.data.approve:
            return
        raise ToolError(f"the person declined: the code of {name!r} was not trusted")
    if isinstance(outcome, AcceptedElicitation):  # not asked: the client cannot ask the person
        raise ToolError(
            f"trusting the code of {name!r} needs the person, and this client cannot ask them (it does not "
            f"support elicitation): they can run {IN_A_TERMINAL.format(name=name)}"
        )
    action = getattr(outcome, "action", "declined")
    raise ToolError(f"the person declined ({action}): the code of {name!r} was not trusted")


def register_trust(server: MCPServer) -> None:
    """Add trust_machine: it changes what may be imported, so it is destructive; it spends nothing."""
    server.tool(
        name="trust_machine",
        annotations=ToolAnnotations(
            title="Trust code a model wrote (asks the person)",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )(trust_machine)
