"""What the MCP tools return (their ``structuredContent``): the operations' own models, with the consent
and spending a face adds."""

from __future__ import annotations

from pydantic import Field

from machine.learn import OptimizeReport, Specialization
from machine.measure import SuiteReport
from machine.ops import Consent, MachineSummary
from machine.runs import Model, RunSummary
from machine.spec import GateReport


class MachineList(Model):
    """The workspace's machines."""

    workspace: str
    machines: list[MachineSummary]


class RecentRuns(Model):
    """A machine's newest stored runs."""

    machine: str
    limit: int
    runs: list[RunSummary]


class ConsentInfo(Model):
    """Who consented to a call and how, and the call's line in the spending log."""

    how: str = Field(
        description="elicitation (the person answered the host's form), allowance, or terminal (the "
        "person answered the program's own question)."
    )
    detail: str
    correlation_id: str = Field(description="The id of this call's line in the spending log.")

    @classmethod
    def of(cls, correlation_id: str, consent: Consent) -> ConsentInfo:
        """The consent as the tool reports it."""
        return cls(how=consent.how, detail=consent.detail, correlation_id=correlation_id)


class RehearseResult(SuiteReport):
    """The suite's report (as ``machine suite --json`` prints it), with what the call could and did spend,
    its runs, and the consent it ran under."""

    budget_usd: float
    spent_usd: float
    run_ids: list[str]
    consent: ConsentInfo
    sandboxed: bool = Field(
        default=False,
        description="The machine holds code a model wrote that the person has not trusted: it ran as a "
        "stand-in whose own code (its checks) ran only in the sandbox.",
    )


class VersionResult(Model):
    """The version a changing tool made live."""

    machine: str
    version: str
    model: str
    forced: bool = False
    consent: ConsentInfo


class Approval(Model):
    """The form the person answers."""

    approve: bool = Field(description="Yes to go ahead; no to refuse.")


class SpendApproval(Approval):
    """The form the person answers before a call that spends: yes, and optionally a smaller cap."""

    budget_usd: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Optional: a smaller amount in USD to cap this call at (empty: the amount asked).",
    )


class NotAsked(Model):
    """A resolver's answer when the host's form did not ask the person (no elicitation, or input the
    body refuses). ``question`` is what the server's own policy asks instead, where it can ask (a
    terminal): ``most_usd`` the most the call may spend (None: a change), ``force`` that it overrides
    the refusal the question names."""

    reason: str
    question: str | None = None
    most_usd: float | None = None
    force: bool = False


class SpecializeResult(Specialization):
    """The specialize report (as ``machine specialize --json`` prints it), with the call's spending."""

    budget_usd: float
    spent_usd: float
    consent: ConsentInfo


class OptimizeResult(OptimizeReport):
    """The optimize report (as ``machine optimize --json`` prints it; ``candidate`` is the pending version
    written, if a proposal was kept), with the call's spending."""

    budget_usd: float
    spent_usd: float
    consent: ConsentInfo


class TrainResult(GateReport):
    """The gate report of the pending candidate ``train`` made (``candidate`` is its label, ``model`` the
    checkpoint, ``training`` what it learned from), with the call's spending."""

    model: str
    budget_usd: float
    spent_usd: float
    consent: ConsentInfo
