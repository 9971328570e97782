"""The MCP tools and the resolvers that ask the person for consent. Each parses its arguments, calls the
server's ``Service`` (the operations every face shares) and returns a typed result, so clients get
``structuredContent``; bad input is an ``isError`` result with a clear message.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from collections.abc import Awaitable
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from machine.errors import CommitRefused, MachineError
from machine.learn import TrainingShown, training_shown
from machine.measure import MeasureOptions, SuiteReport
from machine.ops import MachineInfo, run_planned
from machine.runs import Run
from machine.versions import commit as commit_version
from machine.versions import format_report, plan_commit, plan_revert
from machine.versions import revert as revert_version

from ._asking import NOBODY, asked, can_ask, commit_question, question, revert_question, spent_of
from ._bounds import Force, Limit, MachineName, RecordId, RunCases, RunHarness, RunId, RunModel, Trials
from ._results import Approval, MachineList, NotAsked, RecentRuns, RehearseResult, VersionResult
from ._server import service
from ._service import OnProgress, tool_error, usd

USD = Annotated[
    float,
    Field(
        strict=True,
        allow_inf_nan=False,
        description="The most this call may spend, in USD (the server caps it; free harnesses spend 0).",
    ),
]
"""A budget as a JSON number only: ``true``, ``"1"`` or NaN is refused, not taken for a number."""


def _read_only(title: str) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=True, destructive_hint=False, open_world_hint=False)


async def list_machines(ctx: Context) -> MachineList:
    """List the machines of this workspace: name, intent, model and parent."""
    return service(ctx).machines()


async def show_machine(name: MachineName, ctx: Context) -> MachineInfo:
    """Describe one machine: intent, model, rubric criteria with their graders, tools, cases files."""
    return service(ctx).show(name)


async def recent_runs(name: MachineName, ctx: Context, limit: Limit = 20) -> RecentRuns:
    """The machine's newest stored runs (newest first), with their scores: at most `limit` (1 to 500)."""
    return service(ctx).recent(name, limit)


async def show_run(id: RunId, ctx: Context) -> Run:
    """One stored run whole: its input, every step of its trajectory (tool calls and results), output,
    scorecard with each grader's reason, error, cost, timings and tags."""
    try:
        return service(ctx).ws.store.get(id)
    except MachineError as error:
        raise tool_error(error) from error


async def show_training(id: RecordId, ctx: Context) -> TrainingShown:
    """A training record whole: its plan, settings, data pins, the gate fixed before its first step, its
    outcome, and the loss of every step and epoch."""
    try:
        return training_shown(service(ctx).ws, id)
    except MachineError as error:
        raise tool_error(error) from error


TRIALS: int = MeasureOptions.default("trials")
"""How many times rehearse runs each case unless told: a measurement's default."""


async def ask_rehearse(
    name: str,
    budget_usd: USD,
    trials: int,
    cases: str | None,
    model: str | None,
    harness: str | None,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    if not can_ask(ctx):
        return NOBODY
    try:
        ws, plan, _, sandboxed = await service(ctx).plan(name, budget_usd, trials, cases, model, harness)
    except ToolError:
        return NotAsked(reason="bad input: the tool refuses it")
    amount = ws.budget.usd or 0.0
    return asked(ctx, question(plan, amount, sandboxed), most_usd=amount)


async def rehearse(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_rehearse)],
    trials: Trials = TRIALS,
    cases: RunCases = None,
    model: RunModel = None,
    harness: RunHarness = None,
) -> RehearseResult:
    """Run and grade every case of a machine `trials` times, spending at most `budget_usd`
    (required; capped per call). `cases` names a cases file in the machine's folder (default
    cases.json; e.g. holdout.json). Needs the person's consent: they are asked, or their configured
    allowance must cover the budget. Reports progress per finished run; returns the suite's report
    (as `machine suite --json` prints it) and the run ids."""
    state = service(ctx)
    ws, plan, spec, sandboxed = await state.plan(name, budget_usd, trials, cases, model, harness)
    amount = ws.budget.usd or 0.0
    run_ids: list[str] = []

    def suite(on_run: OnProgress) -> Awaitable[SuiteReport]:
        def each(run: Run) -> None:
            run_ids.append(run.id)
            on_run(run)

        return run_planned(ws, plan, on_run=each, spec=spec)

    what = f"rehearse {name!r} (at most {usd(amount)})"
    report, info = await state.spend(
        ctx, ws, consent, tool="rehearse", name=name, what=what, work=suite, total=plan.runs
    )
    if report.runs == 0 and report.stopped:
        raise ToolError(f"rehearse {name!r} ran nothing: {report.stopped}")
    return RehearseResult(**dict(report), **spent_of(ws), run_ids=run_ids, consent=info, sandboxed=sandboxed)


async def ask_commit(name: str, force: bool, ctx: Context) -> Elicit[Approval] | NotAsked:
    if not can_ask(ctx) or name not in service(ctx).names():
        return NOBODY
    state = service(ctx)
    try:
        plan = plan_commit(state.ws, name, harness=state.harness)
    except MachineError:
        return NotAsked(reason="bad input: the tool refuses it")
    if plan.refusal is not None and not force:
        return NotAsked(reason="refused: the tool says why")
    return asked(ctx, commit_question(plan), most_usd=None, force=plan.refusal is not None)


async def commit(
    name: MachineName,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_commit)],
    force: Force = False,
) -> VersionResult:
    """Make the machine's newest pending candidate live, only if it passed the promotion gate measured
    on the harness and model it will run on (the server's harness, else the one it was measured on;
    force overrides that, and is asked about on its own, naming the refusal). Needs the person's
    consent: they are asked, or their configured allowance covers a commit the gate passed."""
    state = service(ctx)
    state.known(name)
    try:
        plan = plan_commit(state.ws, name, harness=state.harness)
    except MachineError as error:
        raise tool_error(error) from error
    if plan.refusal is not None and not force:  # refused before anyone is asked
        raise _commit_refused(plan.refusal)
    forced = " by force, over its refusal" if plan.refusal is not None else ""
    what = f"commit {name!r} ({plan.candidate.label} in place of {plan.live.label}{forced})"
    try:
        version, info = await state.change(
            "commit",
            name,
            what,
            consent,
            lambda: commit_version(state.ws, name, force=force, harness=state.harness),
        )
    except CommitRefused as refused:
        raise _commit_refused(refused) from refused
    return VersionResult(
        machine=name, version=version.label, model=version.model, forced=version.forced, consent=info
    )


def _commit_refused(refused: MachineError) -> ToolError:
    """A commit refusal as the agent sees it: the gate's report, then why and how to get past it."""
    report = getattr(refused, "report", None)
    shown = format_report(report) + "\n" if report is not None else ""
    return ToolError(f"{shown}commit refused: {tool_error(refused, accepts=('force',))}")


async def ask_revert(name: str, ctx: Context) -> Elicit[Approval] | NotAsked:
    if not can_ask(ctx) or name not in service(ctx).names():
        return NOBODY
    try:
        plan = plan_revert(service(ctx).ws, name)
    except MachineError:
        return NotAsked(reason="bad input: the tool refuses it")
    return asked(ctx, revert_question(plan), most_usd=None)


async def revert(
    name: MachineName,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_revert)],
) -> VersionResult:
    """Make the machine's previous live version live again, writing back its instructions.md and
    model.json. Needs the person's consent: they are asked, or their configured allowance covers it."""
    state = service(ctx)
    state.known(name)
    try:
        plan = plan_revert(state.ws, name)
    except MachineError as error:
        raise tool_error(error) from error
    what = f"revert {name!r} ({plan.live.label} to {plan.target.label})"
    version, info = await state.change("revert", name, what, consent, lambda: revert_version(state.ws, name))
    return VersionResult(machine=name, version=version.label, model=version.model, consent=info)


def register(server: MCPServer) -> None:
    """Add every tool to ``server``, with the hints hosts show the person."""
    server.tool(annotations=_read_only("List machines"))(list_machines)
    server.tool(annotations=_read_only("Show a machine"))(show_machine)
    server.tool(annotations=_read_only("Recent runs"))(recent_runs)
    server.tool(annotations=_read_only("Show a run"))(show_run)
    server.tool(annotations=_read_only("Show a training record"))(show_training)
    server.tool(
        annotations=ToolAnnotations(
            title="Rehearse a machine (spends)",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=True,
        )
    )(rehearse)
    changing = {"read_only_hint": False, "destructive_hint": True, "open_world_hint": False}
    server.tool(annotations=ToolAnnotations(title="Commit a candidate", **changing))(commit)
    server.tool(annotations=ToolAnnotations(title="Revert to the previous version", **changing))(revert)
