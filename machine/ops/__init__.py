"""The operations every face calls (the SDK handle, the ``machine`` command, the MCP server): plan and run
a suite, describe and list machines, spend under the person's policy, and make harnesses, sandboxes and
model access and trainers by name (the one place the core meets its adapters)."""

from ._compose import (
    default_harness_name,
    harness_for,
    local_sandboxes,
    make_harness,
    make_trainer,
    model_access,
    open_workspace,
)
from ._describe import (
    CriterionInfo,
    MachineInfo,
    MachineSummary,
    ToolInfo,
    cases_files,
    describe,
    list_machines,
)
from ._handle import MachineHandle, load
from ._plans import plan_learning
from ._policy import ALLOWANCE_ENV, MAX_BUDGET_ENV, SPENDING_LOG, Consent, SpendingPolicy
from ._session import RunMessage, RunStream, Session
from ._spend import Spend
from ._suite import CASES_NAME, SuitePlan, plan_suite, run_planned
from ._trust import FileReview, TrustReview, pending, review, trust, untrustable
from ._untrusted import stand_in

__all__ = [
    "ALLOWANCE_ENV",
    "CASES_NAME",
    "MAX_BUDGET_ENV",
    "SPENDING_LOG",
    "Consent",
    "CriterionInfo",
    "FileReview",
    "MachineHandle",
    "MachineInfo",
    "MachineSummary",
    "RunMessage",
    "RunStream",
    "Session",
    "Spend",
    "SpendingPolicy",
    "SuitePlan",
    "ToolInfo",
    "TrustReview",
    "cases_files",
    "default_harness_name",
    "describe",
    "harness_for",
    "list_machines",
    "load",
    "local_sandboxes",
    "make_harness",
    "make_trainer",
    "model_access",
    "open_workspace",
    "pending",
    "plan_learning",
    "plan_suite",
    "review",
    "run_planned",
    "stand_in",
    "trust",
    "untrustable",
]
