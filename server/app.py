"""The MCP server's tools: a thin adapter over the library
(list, show, recent runs, rehearse, commit, revert).

Each tool parses its arguments, calls the library and returns a typed (pydantic) result, so clients get
``structuredContent``. Bad input becomes an ``isError`` result with a clear message (``ToolError``); nothing a
client sends crashes the server.

Spending (``rehearse``) and changing (``commit``, ``revert``) run only with the person's consent through a
channel the model cannot forge (``machine._policy.SpendingPolicy``):

- when the client declares form elicitation, the person is asked in the host's form (what the call will
  do, and the most it may spend); "no", a decline or a cancel refuses the call;
- otherwise the allowance the person set in the server's own configuration (``MACHINE_ALLOW_SPEND_USD`` in the
  ``env`` of the server in the host's MCP config) must cover the budget; the allowance also authorises the
  changing tools, which spend nothing (they reserve $0 of it, so an allowance must be set, even "0");
- with neither, the tool refuses, and its message says how to allow it.

This module deliberately has no ``from __future__ import annotations``: the tools' resolver annotations name
closures, which the SDK reads with ``typing.get_type_hints``.
"""

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from machine._budget import Budget
from machine._errors import BudgetExceeded, CommitRefused, ConsentRequired, MachineError
from machine._policy import Consent, SpendingPolicy
from machine._runs import Run, Usage
from machine._store import RunSummary as StoredSummary
from machine._versions import Version
from machine._workspace import Workspace

log = logging.getLogger("machine.server")

MAX_TRIALS = 20
MAX_RECENT = 500
CASES_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.json$")
CHANGE_NOTE = (
    " The allowance also authorises the changing tools (commit, revert), which spend nothing: "
    "set it, even to 0, to let an agent make those changes without being asked."
)


# -- results -------------------------------------------------------------------------------------------------


class MachineSummary(BaseModel):
    name: str
    intent: str | None = None
    model: str | None = None
    parent: str | None = None
    error: str | None = Field(
        default=None, description="Why the machine could not be loaded, if it could not."
    )


class MachineList(BaseModel):
    workspace: str
    machines: list[MachineSummary]


class CriterionInfo(BaseModel):
    name: str
    description: str
    weight: float
    grader: str
    origin: str = Field(description="The machine the criterion is defined in (a parent, for inherited ones).")


class ToolInfo(BaseModel):
    name: str
    description: str
    origin: str


class MachineDetail(BaseModel):
    name: str
    intent: str
    model: str
    parent: str | None = None
    counterpart: str | None = None
    max_steps: int | None = None
    criteria: list[CriterionInfo]
    tools: list[ToolInfo]
    cases_files: list[str] = Field(
        description="Cases files in the machine's folder, for rehearse(cases=...)."
    )


class RunSummary(BaseModel):
    id: str
    created_at: str
    case_id: str | None = None
    trial: int | None = None
    suite_id: str | None = None
    version: str | None = None
    model: str
    harness: str
    status: str
    score: float | None = None
    passed: bool | None = None
    cost_usd: float
    error: str | None = None


class RecentRuns(BaseModel):
    machine: str
    limit: int
    runs: list[RunSummary]


class ConsentInfo(BaseModel):
    how: str = Field(description="elicitation (the person answered the host's form) or allowance.")
    detail: str
    correlation_id: str = Field(description="The id of this call's line in the spending log.")


class SuiteSummary(BaseModel):
    runs: int
    mean: float | None
    pass_rate: float | None
    unscored: int
    unscored_runs: int
    errors: int
    cost_usd: float


class CaseSummary(BaseModel):
    id: str
    trials: int
    mean: float | None
    passes: int
    scores: list[float]


class CriterionSummary(BaseModel):
    mean: float | None
    pass_rate: float | None
    runs: int
    unscored: int


class RehearseResult(BaseModel):
    machine: str
    suite_id: str | None
    budget_usd: float
    spent_usd: float
    summary: SuiteSummary
    cases: list[CaseSummary]
    criteria: dict[str, CriterionSummary]
    stopped: str | None = Field(description="Why the suite stopped early (the budget), or null.")
    run_ids: list[str]
    consent: ConsentInfo


class VersionResult(BaseModel):
    machine: str
    version: str
    model: str
    forced: bool = False
    consent: ConsentInfo


class Approval(BaseModel):
    """The form the person answers."""

    approve: bool = Field(description="Yes to go ahead; no to refuse.")


class NotAsked(BaseModel):
    """A resolver's answer when it did not ask the person (no elicitation, or input the body refuses)."""

    reason: str


# -- the server ----------------------------------------------------------------------------------------------

HarnessFactory = Callable[[str | None], Any]


def _can_elicit(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _usd(value: float) -> str:
    return f"${value:.2f}" if value == round(value, 2) else f"${value:.4g}"


def _run_summary(run: StoredSummary) -> RunSummary:
    return RunSummary(
        id=run.id,
        created_at=run.created_at,
        case_id=run.case_id,
        trial=run.trial,
        suite_id=run.suite_id,
        version=run.version,
        model=run.model,
        harness=run.harness,
        status=run.status,
        score=run.score,
        passed=run.passed,
        cost_usd=run.cost_usd,
        error=run.error,
    )


def _consent_info(correlation_id: str, consent: Consent) -> ConsentInfo:
    return ConsentInfo(how=consent.how, detail=consent.detail, correlation_id=correlation_id)


class _Plan(BaseModel):
    """A rehearse call, checked: what it will run and what it may spend."""

    machine: str
    amount: float
    trials: int
    cases_file: str
    case_count: int
    model: str
    harness: str

    def question(self) -> str:
        runs = self.case_count * self.trials
        return (
            f"Rehearse machine {self.machine!r}: run and grade {self.case_count} cases "
            f"from {self.cases_file} "
            f"x {self.trials} trial{'s' if self.trials != 1 else ''} ({runs} runs) with model {self.model} "
            f"on the {self.harness} harness, spending at most {_usd(self.amount)}. Allow it?"
        )


def _cases_files(folder: Path) -> list[str]:
    """The machine's JSON files that hold cases (a list, or ``{"cases": [...]}``), not its versions,
    model or scripts."""
    names = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, list) or (isinstance(data, dict) and isinstance(data.get("cases"), list)):
            names.append(path.name)
    return names


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
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    policy = policy or SpendingPolicy.from_env(ws.data_dir / "spending.jsonl")
    default_harness = harness
    script_path = str(script) if script is not None else None
    spending_lock = anyio.Lock()  # one spending call at a time: the allowance and the store stay in order

    server: MCPServer = MCPServer(
        name="machine",
        instructions=(
            "Machines are small agent loops with a rubric. list_machines and show_machine describe them, "
            "recent_runs shows their graded runs, rehearse runs and grades a machine's cases (it spends: "
            "give budget_usd), commit and revert change which version is live. Spending and changing tools "
            "need the person's consent: they are asked, or an allowance in the server's configuration "
            "covers it."
        ),
        token_verifier=token_verifier,
        auth=auth,
    )

    def known(name: str) -> None:
        names = ws.names()
        if name not in names:
            listing = ", ".join(names) if names else "none"
            raise ToolError(f"there is no machine {name!r}; the known machines are: {listing}")

    def make_harness(name: str | None) -> Any:
        from machine.clients import make_harness as make

        return make(name or default_harness, script=script_path)

    def plan_rehearse(
        name: str, budget_usd: float, trials: int, cases: str | None, model: str | None, harness: str | None
    ) -> _Plan:
        """Check a rehearse call before asking anyone: raises ToolError with what is wrong."""
        known(name)
        try:
            amount = policy.check_amount(budget_usd)
            spec = ws.load(name)
        except MachineError as error:
            raise ToolError(str(error)) from error
        if not 1 <= trials <= MAX_TRIALS:
            raise ToolError(f"trials={trials} is not allowed: give 1 to {MAX_TRIALS}")
        folder = ws.machines_dir / name
        file_name = cases or "cases.json"
        available = _cases_files(folder)
        if not CASES_NAME.match(file_name) or not (folder / file_name).is_file():
            listing = ", ".join(available) if available else "none"
            raise ToolError(
                f"cases={file_name!r} is not a cases file of machine {name!r}: "
                f"give the name of a .json file in "
                f"its folder (available: {listing})"
            )
        try:
            loaded = ws.cases(spec, folder / file_name)
        except MachineError as error:
            raise ToolError(
                f"the cases file {file_name} of machine {name!r} cannot be used: {error}"
            ) from error
        except (ValueError, OSError) as error:
            raise ToolError(
                f"the cases file {file_name} of machine {name!r} cannot be read: {error}"
            ) from error
        if not loaded:
            raise ToolError(f"the cases file {file_name} of machine {name!r} holds no cases")
        try:
            harness_name = make_harness(harness).name
        except MachineError as error:
            raise ToolError(str(error)) from error
        run_model = model or spec.model
        try:
            Budget(amount).cost(run_model, Usage(input_tokens=1))
        except BudgetExceeded as error:
            raise ToolError(
                f"model {run_model!r} has no known price, so it cannot run under budget_usd: name a model in "
                "the pricing table (or leave model out to use the machine's own)"
            ) from error
        return _Plan(
            machine=name,
            amount=amount,
            trials=trials,
            cases_file=file_name,
            case_count=len(loaded),
            model=run_model,
            harness=harness_name,
        )

    def consent_for(
        outcome: Any, *, tool: str, machine: str, amount: float, what: str, changes: bool
    ) -> tuple[str, Consent]:
        """The person's consent to this call, from the form they answered or the allowance; else ToolError."""
        if isinstance(outcome, AcceptedElicitation) and isinstance(outcome.data, Approval):
            if not outcome.data.approve:
                raise ToolError(f"the person declined: {what} was not done")
            return policy.consented(
                "elicitation",
                f"the person approved in the host's form: {what}",
                budget_usd=amount,
                tool=tool,
                machine=machine,
            )
        if not isinstance(outcome, AcceptedElicitation):  # declined or cancelled the form
            action = getattr(outcome, "action", "declined")
            raise ToolError(f"the person declined ({action}): {what} was not done")
        try:
            return policy.reserve(amount, tool=tool, machine=machine)
        except ConsentRequired as error:
            raise ToolError(str(error) + (CHANGE_NOTE if changes else "")) from error
        except MachineError as error:
            raise ToolError(str(error)) from error

    # -- read-only tools ---------------------------------------------------------------------------------

    @server.tool(
        annotations=ToolAnnotations(
            title="List machines", read_only_hint=True, destructive_hint=False, open_world_hint=False
        )
    )
    async def list_machines() -> MachineList:
        """List the machines of this workspace: name, intent, model and parent."""
        listed: list[MachineSummary] = []
        for name in ws.names():
            try:
                spec = ws.load(name)
            except MachineError as error:
                listed.append(MachineSummary(name=name, error=str(error)))
                continue
            listed.append(
                MachineSummary(
                    name=name,
                    intent=spec.intent,
                    model=spec.model,
                    parent=spec.parent.name if spec.parent else None,
                )
            )
        return MachineList(workspace=str(ws.root), machines=listed)

    @server.tool(
        annotations=ToolAnnotations(
            title="Show a machine", read_only_hint=True, destructive_hint=False, open_world_hint=False
        )
    )
    async def show_machine(name: str) -> MachineDetail:
        """Describe one machine: intent, model, rubric criteria with their graders, tools, cases files."""
        known(name)
        try:
            info = ws.describe(name)
        except MachineError as error:
            raise ToolError(str(error)) from error
        folder = ws.machines_dir / name
        return MachineDetail(
            name=info["name"],
            intent=info["intent"],
            model=info["model"],
            parent=info["parent"],
            counterpart=info["counterpart"],
            max_steps=info["max_steps"],
            criteria=[
                CriterionInfo(
                    name=c["name"],
                    description=c["description"],
                    weight=c["weight"],
                    grader=c["grader"],
                    origin=c["from"],
                )
                for c in info["criteria"]
            ],
            tools=[
                ToolInfo(name=t["name"], description=t["description"], origin=t["from"])
                for t in info["tools"]
            ],
            cases_files=_cases_files(folder),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Recent runs", read_only_hint=True, destructive_hint=False, open_world_hint=False
        )
    )
    async def recent_runs(name: str, limit: int = 20) -> RecentRuns:
        """The machine's newest stored runs (newest first), with their scores: at most `limit` (1 to 500)."""
        if not 1 <= limit <= MAX_RECENT:
            raise ToolError(f"limit={limit} is not allowed: give 1 to {MAX_RECENT}")
        runs = ws.store.summaries(name, limit=limit)  # the listed fields only: no run is validated
        if not runs:  # a machine with stored runs exists (or did): only an empty answer needs the check
            known(name)
        return RecentRuns(machine=name, limit=limit, runs=[_run_summary(r) for r in runs])

    # -- spending and changing tools ---------------------------------------------------------------------

    async def ask_rehearse(
        name: str,
        budget_usd: float,
        trials: int,
        cases: str | None,
        model: str | None,
        harness: str | None,
        ctx: Context,
    ) -> Elicit[Approval] | NotAsked:
        if not _can_elicit(ctx):
            return NotAsked(reason="the client cannot ask the person")
        try:
            plan = plan_rehearse(name, budget_usd, trials, cases, model, harness)
        except ToolError:
            return NotAsked(reason="bad input: the tool refuses it")
        return Elicit(plan.question(), Approval)

    @server.tool(
        annotations=ToolAnnotations(
            title="Rehearse a machine (spends)",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=True,
        )
    )
    async def rehearse(
        name: str,
        budget_usd: float,
        ctx: Context,
        consent: Annotated[ElicitationResult[Approval], Resolve(ask_rehearse)],
        trials: int = 1,
        cases: str | None = None,
        model: str | None = None,
        harness: str | None = None,
    ) -> RehearseResult:
        """Run and grade every case of a machine `trials` times, spending at most `budget_usd`
        (required; capped per call). `cases` names a cases file in the machine's folder (default
        cases.json; e.g. holdout.json). Needs the person's consent: they are asked, or their configured
        allowance must cover the budget. Reports progress per finished run; returns the suite summary,
        per-case results and the run ids."""
        plan = plan_rehearse(name, budget_usd, trials, cases, model, harness)
        what = f"rehearse {name!r} (at most {_usd(plan.amount)})"
        correlation_id, given = consent_for(
            consent, tool="rehearse", machine=name, amount=plan.amount, what=what, changes=False
        )
        log.info("rehearse %s: %s consent, correlation id %s", name, given.how, correlation_id)
        spent = 0.0
        try:
            async with spending_lock:
                budget = Budget(plan.amount)
                run_ws = Workspace(
                    ws.root,
                    store=ws.store,
                    harness=make_harness(harness),
                    budget=budget,
                    data_dir=ws.data_dir,
                )
                spec = run_ws.load(name)
                cases_list = run_ws.cases(spec, ws.machines_dir / name / plan.cases_file)
                total = len(cases_list) * plan.trials
                run_ids: list[str] = []
                send, receive = anyio.create_memory_object_stream[Run](max_buffer_size=total + 1)

                def on_run(run: Run) -> None:
                    run_ids.append(run.id)
                    send.send_nowait(run)

                async def progress() -> None:
                    done = 0
                    async with receive:
                        async for run in receive:
                            done += 1
                            score = run.scorecard.score if run.scorecard is not None else None
                            note = "error" if run.status == "error" else f"score {score}"
                            await ctx.report_progress(
                                done, total, f"case {run.case_id} trial {run.trial}: {note}"
                            )

                from machine._suite import run_suite

                try:
                    async with anyio.create_task_group() as group:
                        group.start_soon(progress)
                        try:
                            report = await run_suite(
                                run_ws,
                                spec,
                                cases_list,
                                trials=plan.trials,
                                model=model,
                                on_run=on_run,
                                cases_file=str(ws.machines_dir / name / plan.cases_file),
                            )
                        finally:
                            send.close()
                finally:
                    spent = budget.spent
                    await run_ws.aclose()
        except MachineError as error:
            raise ToolError(str(error)) from error
        finally:
            policy.settle(correlation_id, spent_usd=spent)
        data = report.to_json()
        if report.runs == 0 and report.stopped:
            raise ToolError(f"rehearse {name!r} ran nothing: {report.stopped}")
        return RehearseResult(
            machine=name,
            suite_id=report.suite_id,
            budget_usd=plan.amount,
            spent_usd=spent,
            summary=SuiteSummary(**data["summary"]),
            cases=[CaseSummary(**c) for c in data["cases"]],
            criteria={k: CriterionSummary(**v) for k, v in data["criteria"].items()},
            stopped=report.stopped,
            run_ids=run_ids,
            consent=_consent_info(correlation_id, given),
        )

    async def change(
        tool: str, name: str, what: str, consent: Any, action: Callable[[], Version]
    ) -> tuple[Version, ConsentInfo]:
        """A changing tool's steps: the person's consent (it spends nothing), the change under the lock,
        the settled log line. CommitRefused passes through for the caller's report; other errors are
        tool errors."""
        known(name)
        correlation_id, given = consent_for(
            consent, tool=tool, machine=name, amount=0.0, what=what, changes=True
        )
        try:
            async with spending_lock:
                version = action()
        except CommitRefused:
            raise
        except MachineError as error:
            raise ToolError(str(error)) from error
        finally:
            policy.settle(correlation_id, spent_usd=0.0)
        return version, _consent_info(correlation_id, given)

    async def ask_commit(name: str, force: bool, ctx: Context) -> Elicit[Approval] | NotAsked:
        if not _can_elicit(ctx) or name not in ws.names():
            return NotAsked(reason="not asked")
        gate = (
            " even if it did not pass the promotion gate (force)"
            if force
            else ", only if it passed the promotion gate"
        )
        return Elicit(
            f"Commit machine {name!r}: make its newest pending candidate live{gate}, "
            "rewriting its model.json. "
            "This spends nothing. Allow it?",
            Approval,
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Commit a candidate", read_only_hint=False, destructive_hint=True, open_world_hint=False
        )
    )
    async def commit(
        name: str,
        consent: Annotated[ElicitationResult[Approval], Resolve(ask_commit)],
        force: bool = False,
    ) -> VersionResult:
        """Make the machine's newest pending candidate live, only if it passed the promotion gate (force
        overrides that). Needs the person's consent: they are asked, or their configured allowance
        covers it."""
        from machine._versions import commit as commit_version
        from machine._versions import format_report

        what = f"commit {name!r}" + (" with force" if force else "")
        try:
            version, info = await change(
                "commit", name, what, consent, lambda: commit_version(ws, name, force=force)
            )
        except CommitRefused as refused:
            report = format_report(refused.report) + "\n" if refused.report is not None else ""
            raise ToolError(f"{report}commit refused: {refused}") from refused
        return VersionResult(
            machine=name, version=version.label, model=version.model, forced=version.forced, consent=info
        )

    async def ask_revert(name: str, ctx: Context) -> Elicit[Approval] | NotAsked:
        if not _can_elicit(ctx) or name not in ws.names():
            return NotAsked(reason="not asked")
        return Elicit(
            f"Revert machine {name!r}: make its previous live version live again, writing back its "
            "instructions.md and model.json. This spends nothing. Allow it?",
            Approval,
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Revert to the previous version",
            read_only_hint=False,
            destructive_hint=True,
            open_world_hint=False,
        )
    )
    async def revert(
        name: str, consent: Annotated[ElicitationResult[Approval], Resolve(ask_revert)]
    ) -> VersionResult:
        """Make the machine's previous live version live again, writing back its instructions.md and
        model.json. Needs the person's consent: they are asked, or their configured allowance covers it."""
        from machine._versions import revert as revert_version

        version, info = await change(
            "revert", name, f"revert {name!r}", consent, lambda: revert_version(ws, name)
        )
        return VersionResult(machine=name, version=version.label, model=version.model, consent=info)

    return server
