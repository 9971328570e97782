"""What the MCP tools do, behind their schemas: each calls the operations every face shares, under the
person's consent and the spending policy, and turns the library's errors into tool errors whose fixes
are spelt as tool arguments."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Collection
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Context
from mcp.server.mcpserver.exceptions import ToolError

from machine.budget import Budget
from machine.errors import (
    CommitRefused,
    ConsentDeclined,
    ConsentRequired,
    Fix,
    MachineError,
    UnknownPriceError,
)
from machine.ops import (
    AskingPolicy,
    Consent,
    MachineInfo,
    Spend,
    SpendingPolicy,
    SuitePlan,
    TrustReview,
    WorkspaceSpendingLog,
    describe,
    harness_for,
    list_machines,
    open_workspace,
    plan_suite,
    stand_in,
)
from machine.runs import Question, Run, mask_passwords
from machine.spec import Machine, Version
from machine.training import StepMetrics
from machine.workspace import Workspace

from ._edits import ProjectEdits
from ._progress import report_progress, told
from ._results import Approval, ConsentInfo, MachineList, NotAsked, RecentRuns
from ._staleness import Signature, StoreVersion, signature

log = logging.getLogger("machine.server")
T = TypeVar("T")
OnProgress = Callable[[Run | StepMetrics | str], None]
"""Told of each finished run, each training step and each line a training says (where it resumes), which
the client hears as progress."""

MAX_TRIALS = 20
RUN_ARGUMENTS = ("budget_usd", "trials", "cases", "model", "harness")
"""The arguments of rehearse a fix may name."""
MAX_RECENT = 500
MAX_KEPT = 64
"""How many recent_runs answers are kept (by machine and limit) for repeated calls."""
FROM_STORE = frozenset({"recent_runs", "show_run", "show_training"})
"""The tools whose answers come from the store alone, not from the machine files."""
ARGUMENTS = {"budget": "budget_usd"}
"""Operation arguments that a tool names otherwise."""
TOOLS = {
    "suite": "the rehearse tool",
    "trust": "the person reviewing it and trusting it (the trust_machine tool asks them)",
    "runs": "the recent_runs tool",
}
"""The tool for each operation a fix can name (the others have no tool)."""
TRUST_ELSEWHERE = (
    "the person reviewing it and trusting it in a terminal (this server does not offer trusting)"
)
"""The trust fix of a server that leaves trust_machine out: the person trusts outside the host."""
TRUST_HERE: ContextVar[bool] = ContextVar("machine_trust_here", default=True)
"""Whether the server a call reached offers trust_machine (set for each call, read by ``tool_error``)."""


def tool_error(error: MachineError, accepts: Collection[str] = ()) -> ToolError:
    """The library's error as the agent sees it: each fix the tool ``accepts`` spelt as a tool argument
    (``force: true``, ``budget_usd: 2.5``), the others left out."""

    def spell(fix: Fix) -> str | None:
        if fix.operation:
            here = fix.operation != "trust" or TRUST_HERE.get()
            tool = TOOLS.get(fix.operation) if here else TRUST_ELSEWHERE
            given = ", ".join(_argument(name, value) for name, value in fix.arguments)
            return f"{tool} with {given}" if tool and given else tool
        if ARGUMENTS.get(fix.argument, fix.argument) not in accepts:
            return None
        return f"call again with {_argument(fix.argument, fix.value)}"

    return ToolError(mask_passwords(error.explain(spell)))  # a store's location the person gave


def _argument(name: str, value: str | None) -> str:
    """``budget_usd: 2.5``, ``force: true``: an argument as a tool call gives it."""
    return f"{ARGUMENTS.get(name, name)}: {'true' if value is None else value}"


def can_elicit(ctx: Context) -> bool:
    """Whether the client can ask the person (MCP form elicitation)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def usd(value: float) -> str:
    """Cents as cents ($1.00), a smaller amount without rounding it away ($0.0001)."""
    return f"${value:.2f}" if value == round(value, 2) else f"${value:.4g}"


class Service:
    """The server's state, kept for its life: the workspace (its store connection and loaded machines),
    the policy, the default harness, and one lock that keeps spending and changing calls in order.

    Before a call (``before``), ``refresh`` forgets the loaded machines if a machine file changed, so
    the call sees the files as they are; recent_runs answers are kept until a run is written."""

    def __init__(
        self,
        workspace: Workspace | str | Path | None,
        *,
        harness: str | None,
        script: str | Path | None,
        policy: SpendingPolicy | None,
        trust_over_mcp: bool = True,
        edits: ProjectEdits | None = None,
    ) -> None:
        self.ws = workspace if isinstance(workspace, Workspace) else open_workspace(workspace)
        self.edits = edits or ProjectEdits()
        """The project ask_machine's runs work in, if any, and how their changes are made (``_edits``)."""
        self.trust_over_mcp = trust_over_mcp
        """Whether the server offers trust_machine (the person may leave trusting to a terminal)."""
        self.policy = policy or SpendingPolicy.from_env(log=WorkspaceSpendingLog(self.ws))
        self.harness = harness
        self.script = str(script) if script is not None else None
        self.lock = anyio.Lock()
        self._stand_ins: dict[tuple[str, tuple[str, ...]], Machine] = {}
        self.reviews: dict[str, TrustReview] = {}
        """What trust_machine's form is showing the person, by machine, until the tool call takes it."""
        self._files: Signature | None = None
        self._names: list[str] = []
        self._store_version = StoreVersion(self.ws.data_dir / "store.db")
        self._recent: dict[tuple[str, int], tuple[int, RecentRuns]] = {}

    # -- what is kept between calls -------------------------------------------------------------------

    def before(self, tool: str) -> None:
        """Ready for a call of ``tool``: caught up with the machine files, unless its answer comes from
        the store alone (recent_runs, which checks the files itself when it needs them)."""
        TRUST_HERE.set(self.trust_over_mcp)
        if tool not in FROM_STORE:
            self.refresh()

    def refresh(self) -> None:
        """Catch up with the machine files: when any was edited, added or removed since the last call,
        forget every machine loaded (the next use imports the files as they are now)."""
        files = signature(self.ws.machines_dir, self.ws.trust.path)
        if files is None or files != self._files:
            self.ws.loader.unload()
            self._stand_ins.clear()
            self._names = self.ws.names()
        self._files = files

    def names(self) -> list[str]:
        """The workspace's machines, as of the last ``refresh``."""
        if self._files is None:
            self.refresh()
        return self._names

    # -- read-only ----------------------------------------------------------------------------------

    def known(self, name: str) -> None:
        """Refuse a machine that does not exist, listing those that do."""
        names = self.names()
        if name not in names:
            raise ToolError(
                f"there is no machine {name!r}; the known machines are: {', '.join(names) or 'none'}"
            )

    def machines(self) -> MachineList:
        return MachineList(workspace=str(self.ws.root), machines=list_machines(self.ws))

    def show(self, name: str) -> MachineInfo:
        self.known(name)
        try:
            return describe(self.ws, name)
        except MachineError as error:
            raise tool_error(error) from error

    def recent(self, name: str, limit: int) -> RecentRuns:
        """The newest runs; an answer already given is given again while no run was written since (the
        check is one pragma on the store). Its runs come from the store alone, so the tool skips the
        refresh before the call (``before``): only an empty answer needs the machines' names."""
        if not 1 <= limit <= MAX_RECENT:
            raise ToolError(f"limit={limit} is not allowed: give 1 to {MAX_RECENT}")
        store = self.ws.store  # opened (and the file made) before its version is read
        version = self._store_version.current()  # before the query: a run written meanwhile is not missed
        kept = self._recent.get((name, limit))
        if version is not None and kept is not None and kept[0] == version:
            answer = kept[1]
        else:
            runs = store.summaries(name, limit=limit)  # the listed fields only: no run is validated
            answer = RecentRuns(machine=name, limit=limit, runs=runs)
            if version is not None:
                if len(self._recent) >= MAX_KEPT:
                    self._recent.clear()
                self._recent[(name, limit)] = (version, answer)
        if not answer.runs:  # a machine with stored runs exists (or did): only an empty answer is checked
            self.refresh()
            self.known(name)
        return answer

    # -- spending -----------------------------------------------------------------------------------

    async def machine(self, name: str) -> tuple[Machine, bool]:
        """The machine ``name``, and whether it is the sandboxed stand-in of one holding code a model wrote
        that the person has not trusted: a host may rehearse such a machine, but only so (its own code
        runs in the sandbox alone; see ``machine.ops.stand_in``)."""
        self.known(name)
        try:
            if not self.ws.trust.blocking(name):
                return self.ws.load(name), False
            key = (name, tuple(f.sha256 or "" for f in self.ws.trust.files(name)))
            if key not in self._stand_ins:
                self._stand_ins[key] = await stand_in(self.ws, name)
            return self._stand_ins[key], True
        except MachineError as error:
            raise tool_error(error) from error

    async def plan(
        self,
        name: str,
        budget_usd: float,
        trials: int,
        cases: str | None,
        model: str | None,
        harness: str | None,
    ) -> tuple[Workspace, SuitePlan, Machine, bool]:
        """A rehearse call checked before anyone is asked: the call's workspace (its budget and harness),
        the suite it would run, the machine it runs, and whether that is an untrusted machine's sandboxed
        stand-in. Raises ToolError with what is wrong."""
        spec, sandboxed = await self.machine(name)
        ws = self.spending(name, budget_usd, model, harness, RUN_ARGUMENTS, spec=spec)
        try:
            plan = plan_suite(
                ws, spec, cases=cases, trials=trials, model=model, in_folder=True, max_trials=MAX_TRIALS
            )
            return ws, plan, spec, sandboxed
        except UnknownPriceError as error:
            raise ToolError(
                f"{error.message}: name a model in the pricing table "
                "(or leave model out to use the machine's own)"
            ) from error
        except MachineError as error:
            raise tool_error(error, accepts=RUN_ARGUMENTS) from error

    def spending(
        self,
        name: str,
        budget_usd: float,
        model: str | None,
        harness: str | None,
        accepts: Collection[str],
        *,
        own_model: bool = True,
        spec: Machine | None = None,
    ) -> Workspace:
        """A spending call's workspace, checked before anyone is asked: ``budget_usd`` under the cap, the
        harness named (else the server's, else the one for ``model`` or, with ``own_model``, the
        machine's own model). Raises ToolError with what is wrong, its fixes in ``accepts``' terms."""
        self.known(name)
        try:
            amount = self.policy.limit(self.policy.check_amount(budget_usd))
            chosen = harness or self.harness
            if own_model and not (chosen or model):  # the machine's own model picks the harness
                model = (spec or self.ws.load(name)).model
            made = harness_for(self.ws, harness=chosen, model=model, script=self.script)
            self.ws.store  # noqa: B018 - opened now, so the call's copy shares the one connection
            return self.ws.using(budget=Budget(amount), harness=made)
        except MachineError as error:
            raise tool_error(error, accepts=accepts) from error

    async def consent(
        self, outcome: Any, *, tool: str, machine: str, budget: Budget, what: str, changes: bool
    ) -> tuple[Spend, ConsentInfo]:
        """The person's consent to this call (spending from ``budget``, lowered to the smaller amount
        they gave): from the form they answered, the server's own question, or the allowance; else
        ToolError."""
        amount = budget.usd or 0.0
        correlation_id, consent, allowed = await self._consented(
            outcome, tool, machine, amount, what, changes
        )
        if budget.usd is not None and allowed < budget.usd:
            budget.usd = allowed
        return Spend(self.policy, correlation_id, consent, budget), ConsentInfo.of(correlation_id, consent)

    async def _consented(
        self, outcome: Any, tool: str, machine: str, amount: float, what: str, changes: bool
    ) -> tuple[str, Consent, float]:
        if isinstance(outcome, AcceptedElicitation) and isinstance(outcome.data, Approval):
            if not outcome.data.approve:
                raise ToolError(f"the person declined: {what} was not done")
            cap = getattr(outcome.data, "budget_usd", None)
            allowed = amount if cap is None else min(cap, amount)
            correlation_id, consent = self.policy.consented(
                "elicitation",
                f"the person approved in the host's form: {what}"
                + (f", capped at {usd(allowed)}" if allowed < amount else ""),
                budget_usd=allowed,
                tool=tool,
                machine=machine,
            )
            return correlation_id, consent, allowed
        if not isinstance(outcome, AcceptedElicitation):  # declined or cancelled the form
            action = getattr(outcome, "action", "declined")
            raise ToolError(f"the person declined ({action}): {what} was not done")
        try:
            if isinstance(self.policy, AskingPolicy):
                return await self.policy.approve(_question(outcome.data), tool=tool, machine=machine)
            return (*self.policy.reserve(amount, tool=tool, machine=machine), amount)
        except ConsentDeclined as error:
            raise ToolError(f"{error}: {what} was not done") from error
        except ConsentRequired as error:
            raise ToolError(str(error) + (self.policy.changes_note if changes else "")) from error
        except MachineError as error:
            raise tool_error(error) from error

    async def spend(
        self,
        ctx: Context,
        ws: Workspace,
        outcome: Any,
        *,
        tool: str,
        name: str,
        what: str,
        work: Callable[[OnProgress], Awaitable[T]],
        total: int | None = None,
        accepts: Collection[str] = (),
    ) -> tuple[T, ConsentInfo]:
        """A spending tool's steps: the person's consent, then ``work(on_run)`` under the lock with each
        finished run reported as progress (of ``total``, when known), then the settled log line."""
        spend, info = await self.consent(
            outcome, tool=tool, machine=name, budget=ws.budget, what=what, changes=False
        )
        log.info("%s %s: %s consent, correlation id %s", tool, name, info.how, info.correlation_id)
        send, receive = anyio.create_memory_object_stream[Run | StepMetrics | str](max_buffer_size=math.inf)
        failed: MachineError | None = None
        try:
            async with self.lock, anyio.create_task_group() as group:
                group.start_soon(report_progress, ctx, receive, total)
                with send:
                    try:  # here, not around the task group, which would wrap it in an ExceptionGroup
                        result = await work(functools.partial(told, send))
                    except MachineError as error:
                        failed = error
        finally:
            spend.settle()
            await ws.aclose()
        if failed is not None:
            raise tool_error(failed, accepts=accepts) from failed
        return result, info

    async def change(
        self, tool: str, name: str, what: str, outcome: Any, action: Callable[[], Version]
    ) -> tuple[Version, ConsentInfo]:
        """A changing tool's steps: the person's consent (it spends nothing), the change under the lock,
        the settled log line. CommitRefused passes through for the caller's report."""
        self.known(name)
        spend, info = await self.consent(
            outcome, tool=tool, machine=name, budget=Budget(0.0), what=what, changes=True
        )
        try:
            async with self.lock:
                version = action()
        except CommitRefused:
            raise
        except MachineError as error:
            raise tool_error(error) from error
        finally:
            spend.settle()
        return version, info


def _question(asked: object) -> Question:
    """What the server's own policy asks the person (see ``_asking.asked``); a resolver that drew up no
    question (input the tool refuses) leaves an empty one, which the policy cannot put to anyone."""
    if not isinstance(asked, NotAsked) or asked.question is None:
        return Question("", None)
    return Question(asked.question, asked.most_usd, asked.force)
