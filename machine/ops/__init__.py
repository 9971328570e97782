"""The operations that span the core, for every face (the SDK handle, the ``machine`` command, the MCP
server and the machinist through it, the dashboard): plan and run a suite, describe and list machines,
tags and observed runs, trust, chat sessions, copying a store, spend under the person's policy, and make
harnesses, sandboxes, model access and trainers by name (the one place the core meets its adapters).

One implementation per operation, in one home. An operation of one concept lives in that concept's
package, and every face calls it there, as the SDK handle here does (``machine.measure.compare``,
``machine.versions.propose``, ``commit`` and ``revert``, ``machine.learn.optimize``, ``train``,
``specialize`` and ``export``); what composes the workspace with adapters, consent and spending, or
spans concepts, lives here. A face imports this package and the public names of the concept packages
(their operations, records and types), never a private module or name, and writes no operation of its
own: it parses, calls, renders (``tests/test_layers.py`` holds the imports to that).

Names resolve on first use (``__getattr__``): a command imports the operations it calls and no more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from machine.runs import default_harness_name, make_harness
    from machine.training import make_trainer

    from ._asking import AskingPolicy
    from ._compose import harness_for, local_sandboxes, model_access, open_workspace
    from ._describe import (
        CriterionInfo,
        MachineInfo,
        ToolInfo,
        cases_files,
        describe,
    )
    from ._eval_logs import EvalLogFile, EvalLogOptions, EvalLogReport, EvalRuns, LogWriter, export_eval_logs
    from ._executors import EXECUTORS, executor_for
    from ._handle import MachineHandle, load
    from ._import import IMPORT_FORMATS, ImportFormat, ImportReport, import_runs
    from ._listing import MachineSummary, list_machines
    from ._plans import plan_learning
    from ._policy import ALLOWANCE_ENV, MAX_BUDGET_ENV, Consent, SpendingPolicy
    from ._session import RunMessage, RunStream, Session
    from ._spend import Spend
    from ._spending_log import SPENDING_LOG, SpendingLog, WorkspaceSpendingLog
    from ._store_copy import StoreCopy, copy_store
    from ._suite import CASES_NAME, SuitePlan, plan_suite, run_planned
    from ._tagging import MarkedRun, WorkspaceData, data, fork, observed, tagged
    from ._trust import FileReview, TrustReview, pending, review, trust, untrustable
    from ._untrusted import stand_in

_HOMES = {
    "AskingPolicy": "._asking",
    "default_harness_name": "machine.runs",
    "harness_for": "._compose",
    "local_sandboxes": "._compose",
    "make_harness": "machine.runs",
    "make_trainer": "machine.training",
    "model_access": "._compose",
    "open_workspace": "._compose",
    "CriterionInfo": "._describe",
    "MachineInfo": "._describe",
    "MachineSummary": "._listing",
    "MarkedRun": "._tagging",
    "WorkspaceData": "._tagging",
    "data": "._tagging",
    "fork": "._tagging",
    "observed": "._tagging",
    "tagged": "._tagging",
    "ToolInfo": "._describe",
    "cases_files": "._describe",
    "describe": "._describe",
    "list_machines": "._listing",
    "MachineHandle": "._handle",
    "load": "._handle",
    "plan_learning": "._plans",
    "ALLOWANCE_ENV": "._policy",
    "MAX_BUDGET_ENV": "._policy",
    "SPENDING_LOG": "._spending_log",
    "SpendingLog": "._spending_log",
    "WorkspaceSpendingLog": "._spending_log",
    "Consent": "._policy",
    "SpendingPolicy": "._policy",
    "RunMessage": "._session",
    "RunStream": "._session",
    "Session": "._session",
    "Spend": "._spend",
    "StoreCopy": "._store_copy",
    "copy_store": "._store_copy",
    "CASES_NAME": "._suite",
    "EXECUTORS": "._executors",
    "EvalLogFile": "._eval_logs",
    "EvalLogOptions": "._eval_logs",
    "EvalLogReport": "._eval_logs",
    "EvalRuns": "._eval_logs",
    "LogWriter": "._eval_logs",
    "export_eval_logs": "._eval_logs",
    "executor_for": "._executors",
    "IMPORT_FORMATS": "._import",
    "ImportFormat": "._import",
    "ImportReport": "._import",
    "import_runs": "._import",
    "SuitePlan": "._suite",
    "plan_suite": "._suite",
    "run_planned": "._suite",
    "FileReview": "._trust",
    "TrustReview": "._trust",
    "pending": "._trust",
    "review": "._trust",
    "trust": "._trust",
    "untrustable": "._trust",
    "stand_in": "._untrusted",
}
"""The module each public name is defined in."""

__all__ = [
    "ALLOWANCE_ENV",
    "CASES_NAME",
    "EXECUTORS",
    "IMPORT_FORMATS",
    "MAX_BUDGET_ENV",
    "SPENDING_LOG",
    "AskingPolicy",
    "Consent",
    "CriterionInfo",
    "EvalLogFile",
    "EvalLogOptions",
    "EvalLogReport",
    "EvalRuns",
    "FileReview",
    "ImportFormat",
    "ImportReport",
    "LogWriter",
    "MachineHandle",
    "MachineInfo",
    "MachineSummary",
    "MarkedRun",
    "RunMessage",
    "RunStream",
    "Session",
    "Spend",
    "SpendingLog",
    "SpendingPolicy",
    "StoreCopy",
    "SuitePlan",
    "ToolInfo",
    "TrustReview",
    "WorkspaceData",
    "WorkspaceSpendingLog",
    "cases_files",
    "copy_store",
    "data",
    "default_harness_name",
    "describe",
    "executor_for",
    "export_eval_logs",
    "fork",
    "harness_for",
    "import_runs",
    "list_machines",
    "load",
    "local_sandboxes",
    "make_harness",
    "make_trainer",
    "model_access",
    "observed",
    "open_workspace",
    "pending",
    "plan_learning",
    "plan_suite",
    "review",
    "run_planned",
    "stand_in",
    "tagged",
    "trust",
    "untrustable",
]


__getattr__, __dir__ = resolver(__name__, _HOMES)
