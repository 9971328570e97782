"""machine: small agent loops defined in code, with a rubric, an evaluator and stored, graded runs."""

from ._budget import Budget
from ._cases import Case
from ._errors import (
    BadInputError,
    BudgetExceeded,
    CommitRefused,
    ConsentRequired,
    DefinitionError,
    HarnessError,
    MachineError,
    NotFoundError,
    UnknownPriceError,
)
from ._evaluator import Evaluator, define_evaluator
from ._graders import GradeContext, Grader, check
from ._handle import MachineHandle, RunMessage, RunStream, Session, load
from ._harness import Event, Harness, HarnessRequest, HarnessResult
from ._jev import jev
from ._judge import judge, judge_panel
from ._policy import Consent, SpendingPolicy
from ._rubric import Criterion, Rubric, define_rubric
from ._runs import CriterionScore, Message, Run, Scorecard, Tag, ToolCall, Usage
from ._spec import Counterpart, Machine, define_child, define_machine, instructions_from, model_from
from ._store import ChatSession, SQLiteStore, Store
from ._suite import SuiteReport, run_suite
from ._tools import Tool, ToolContext, ToolFailure, tool
from ._versions import Candidate, GateReport, Version
from ._workspace import Workspace

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
    "Rubric",
    "Run",
    "RunMessage",
    "RunStream",
    "SQLiteStore",
    "Scorecard",
    "Session",
    "SpendingPolicy",
    "Store",
    "SuiteReport",
    "Tag",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "UnknownPriceError",
    "Usage",
    "Version",
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
    "run_suite",
    "tool",
]
