"""The MCP tool that hands one task to a machine: ``ask_machine`` runs it once on the host's input and
returns its answer. What the host sent and got back is the person's, so it is kept only while the
workspace observes (``machine observe on``), as an unlabeled ``observed`` run: finishing is no sign it
was good, and only a person's mark makes a training example of it.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from machine.runs import EditRecord, Model, Run
from machine.workspace import observing

from ._asking import NOBODY, asked, can_ask
from ._bounds import MachineName, RunHarness, RunModel
from ._edits import working_in
from ._results import Approval, ConsentInfo, NotAsked
from ._server import service
from ._service import RUN_ARGUMENTS, OnProgress, can_elicit, usd
from ._tools import USD

AskInput = Annotated[
    str, Field(min_length=1, max_length=10_000, description="The task, as the machine's input.")
]


class AskResult(Model):
    """The machine's answer to the host, and whether the run was kept."""

    machine: str
    output: str
    status: str
    error: str | None = None
    kept: bool = Field(description="Whether the run was stored as an observed run (the workspace observes).")
    run_id: str | None = Field(None, description="The stored run's id, when it was kept.")
    cost_usd: float
    consent: ConsentInfo
    edits: list[EditRecord] = Field(
        default_factory=list,
        description="Each change to the project's files the run proposed (the server started in a "
        "project), with the diff or command and whether it was approved or declined, and by whom.",
    )


def _what(name: str, amount: float) -> str:
    return f"run {name!r} once on the host's task (at most {usd(amount)})"


async def ask_ask(
    name: str, input: str, budget_usd: USD, model: str | None, harness: str | None, ctx: Context
) -> Elicit[Approval] | NotAsked:
    if not can_ask(ctx):
        return NOBODY
    try:
        state = service(ctx)
        spec, _ = await state.machine(name)
        ws = state.spending(name, budget_usd, model, harness, RUN_ARGUMENTS, spec=spec)
    except ToolError:
        return NotAsked(reason="bad input: the tool refuses it")
    amount = ws.budget.usd or 0.0
    on = f" with model {model or spec.model} on the {ws.harness.name} harness"
    text = f"Run machine {name!r} once on the host's task{on}, spending at most {usd(amount)}."
    return asked(ctx, text, most_usd=amount)


async def ask_machine(
    name: MachineName,
    input: AskInput,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_ask)],
    model: RunModel = None,
    harness: RunHarness = None,
) -> AskResult:
    """Hand one task to a machine: run it once on `input`, spending at most `budget_usd` (required;
    capped per call), and return its answer. Needs the person's consent, as rehearse does. The run is
    kept in the workspace only while it observes (`kept` says), unlabeled, for the person to review.
    Where the server was started inside a project, the machine's tools work on that project's files:
    each change they would make is shown to the person and made only after their yes, unless the person
    allowed or refused all changes where they started the server; `edits` lists each decision."""
    state = service(ctx)
    spec, _ = await state.machine(name)
    ws = state.spending(name, budget_usd, model, harness, RUN_ARGUMENTS, spec=spec)
    working_in(ws, state.edits, ctx, name, can_ask=can_elicit(ctx) and ctx.session.can_send_request)
    keep = observing(ws.data_dir)

    async def work(_on_run: OnProgress) -> Run:
        made = await ws.run(spec, input, model=model, store=False)
        made = made.model_copy(update={"observed": True})
        if keep:
            ws.store.put(made)
        return made

    made, info = await state.spend(
        ctx,
        ws,
        consent,
        tool="ask_machine",
        name=name,
        what=_what(name, ws.budget.usd or 0.0),
        work=work,
        total=1,
        accepts=RUN_ARGUMENTS,
    )
    return AskResult(
        machine=name,
        output=made.output,
        status=made.status,
        error=made.error,
        kept=keep,
        run_id=made.id if keep else None,
        cost_usd=made.cost_usd,
        consent=info,
        edits=[edit for message in made.trajectory for edit in message.edits],
    )


def register_ask(server: MCPServer) -> None:
    """Add ``ask_machine``, with the hints hosts show the person."""
    server.tool(
        annotations=ToolAnnotations(
            title="Hand a task to a machine (spends)",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=True,
        )
    )(ask_machine)
