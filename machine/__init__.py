"""machine: small agent loops defined in code, with a rubric, an evaluator and stored, graded runs.

The names here are the ones a machine file and a program using machines need; each concept's subpackage
(``machine.runs``, ``machine.grade``, ``machine.spec``, ``machine.workspace``, ``machine.measure``,
``machine.versions``, ``machine.ops``) has the rest.

Names resolve on first use (``__getattr__``), so ``import machine`` imports no subpackage until a name
from it is asked for, and a command that needs little starts fast; type checkers see every name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import (
        BadInputError,
        BudgetExceeded,
        CommitRefused,
        ConsentRequired,
        DefinitionError,
        HarnessError,
        MachineError,
        NotFoundError,
        NotTrusted,
        StoreError,
        UnknownPriceError,
        WorkFailed,
    )
    from .grade import (
        Criterion,
        Evaluator,
        GradeContext,
        Grader,
        Rubric,
        check,
        define_evaluator,
        define_rubric,
        jev,
        judge,
        judge_panel,
    )
    from .learn import Optimization, OptimizeReport
    from .measure import SuiteReport, run_suite
    from .ops import (
        Consent,
        MachineHandle,
        RunMessage,
        RunStream,
        Session,
        SpendingPolicy,
        load,
        open_workspace,
        trust,
    )
    from .runs import (
        Budget,
        ChatSession,
        CriterionScore,
        Event,
        Harness,
        HarnessRequest,
        HarnessResult,
        Message,
        Run,
        Scorecard,
        SQLiteStore,
        Store,
        Tag,
        Tool,
        ToolCall,
        ToolContext,
        ToolFailure,
        Usage,
        tool,
    )
    from .spec import (
        Case,
        Counterpart,
        GateReport,
        Machine,
        Version,
        define_child,
        define_machine,
        instructions_from,
        model_from,
    )
    from .versions import Candidate
    from .workspace import Workspace

_HOMES = {
    "BadInputError": "errors",
    "BudgetExceeded": "errors",
    "CommitRefused": "errors",
    "ConsentRequired": "errors",
    "DefinitionError": "errors",
    "HarnessError": "errors",
    "MachineError": "errors",
    "NotFoundError": "errors",
    "NotTrusted": "errors",
    "StoreError": "errors",
    "UnknownPriceError": "errors",
    "WorkFailed": "errors",
    "Criterion": "grade",
    "Evaluator": "grade",
    "GradeContext": "grade",
    "Grader": "grade",
    "Rubric": "grade",
    "check": "grade",
    "define_evaluator": "grade",
    "define_rubric": "grade",
    "jev": "grade",
    "judge": "grade",
    "judge_panel": "grade",
    "Optimization": "learn",
    "OptimizeReport": "learn",
    "SuiteReport": "measure",
    "run_suite": "measure",
    "Consent": "ops",
    "MachineHandle": "ops",
    "RunMessage": "ops",
    "RunStream": "ops",
    "Session": "ops",
    "SpendingPolicy": "ops",
    "load": "ops",
    "open_workspace": "ops",
    "trust": "ops",
    "Budget": "runs",
    "ChatSession": "runs",
    "CriterionScore": "runs",
    "Event": "runs",
    "Harness": "runs",
    "HarnessRequest": "runs",
    "HarnessResult": "runs",
    "Message": "runs",
    "Run": "runs",
    "Scorecard": "runs",
    "SQLiteStore": "runs",
    "Store": "runs",
    "Tag": "runs",
    "Tool": "runs",
    "ToolCall": "runs",
    "ToolContext": "runs",
    "ToolFailure": "runs",
    "Usage": "runs",
    "tool": "runs",
    "Case": "spec",
    "Counterpart": "spec",
    "GateReport": "spec",
    "Machine": "spec",
    "Version": "spec",
    "define_child": "spec",
    "define_machine": "spec",
    "instructions_from": "spec",
    "model_from": "spec",
    "Candidate": "versions",
    "Workspace": "workspace",
}
"""The subpackage each public name is defined in."""
_SUBPACKAGES = frozenset(
    {"errors", "runs", "grade", "spec", "workspace", "measure", "versions", "learn", "ops", "cli"}
)

__all__ = [
    "BadInputError",
    "Budget",
    "BudgetExceeded",
    "Candidate",
    "Case",
    "ChatSession",
    "CommitRefused",
    "Consent",
    "ConsentRequired",
    "Counterpart",
    "Criterion",
    "CriterionScore",
    "DefinitionError",
    "Evaluator",
    "Event",
    "GateReport",
    "GradeContext",
    "Grader",
    "Harness",
    "HarnessError",
    "HarnessRequest",
    "HarnessResult",
    "Machine",
    "MachineError",
    "MachineHandle",
    "Message",
    "NotFoundError",
    "NotTrusted",
    "Optimization",
    "OptimizeReport",
    "Rubric",
    "Run",
    "RunMessage",
    "RunStream",
    "SQLiteStore",
    "Scorecard",
    "Session",
    "SpendingPolicy",
    "Store",
    "StoreError",
    "SuiteReport",
    "Tag",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "UnknownPriceError",
    "Usage",
    "Version",
    "WorkFailed",
    "Workspace",
    "check",
    "define_child",
    "define_evaluator",
    "define_machine",
    "define_rubric",
    "instructions_from",
    "jev",
    "judge",
    "judge_panel",
    "load",
    "model_from",
    "open_workspace",
    "run_suite",
    "tool",
    "trust",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its subpackage the first time it is asked for, then kept."""
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(f"machine.{home}"), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"machine.{name}")
    else:
        raise AttributeError(f"module 'machine' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
