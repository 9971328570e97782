"""The public surface of ``import machine``: exactly these names, each one importable.

Adding or removing a public name is a decision; this test makes it a visible one (update the list
here together with machine/__init__.py).
"""

from __future__ import annotations

import machine

PUBLIC = [
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


def test_all_is_pinned() -> None:
    assert sorted(machine.__all__) == PUBLIC
    assert len(set(machine.__all__)) == len(machine.__all__), "machine.__all__ repeats a name"


def test_every_public_name_resolves() -> None:
    missing = [name for name in machine.__all__ if getattr(machine, name, None) is None]
    assert not missing, f"machine.__all__ names what machine does not define: {missing}"


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from machine import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == PUBLIC
