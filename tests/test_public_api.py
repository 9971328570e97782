"""The public surface: exactly these names in ``machine`` and in each subpackage, each one importable and
each with a docstring that says what it is for.

Adding or removing a public name is a decision; this test makes it a visible one (update the list
here together with the package's ``__init__``).
"""

from __future__ import annotations

import importlib
import inspect
import types

import pytest

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
]

SUBPACKAGES = {
    "machine.errors": [
        "BadInputError",
        "BudgetExceeded",
        "CommitRefused",
        "ConsentRequired",
        "DefinitionError",
        "Fix",
        "HarnessError",
        "MachineError",
        "NotFoundError",
        "StoreError",
        "UnknownPriceError",
        "UsageRefused",
        "WorkFailed",
        "plain_spelling",
        "python_spelling",
    ],
    "machine.runs": [
        "Budget",
        "ChatSession",
        "CriterionScore",
        "Effort",
        "Event",
        "EventType",
        "FREE_HARNESSES",
        "Harness",
        "HarnessRequest",
        "HarnessResult",
        "LEVELS",
        "Message",
        "Model",
        "ModelAccess",
        "NAME_SEGMENT",
        "NextTurn",
        "Price",
        "Reservation",
        "Run",
        "RunSummary",
        "SQLiteStore",
        "Sandbox",
        "Sandboxes",
        "Scorecard",
        "Store",
        "SuiteRecord",
        "TINKER_PRICES",
        "Tag",
        "Timings",
        "Tool",
        "ToolCall",
        "ToolContext",
        "ToolFailure",
        "Turn",
        "Usage",
        "call_tool",
        "check_name",
        "git_revision",
        "is_free",
        "library_version",
        "new_run_id",
        "now",
        "parse_budget",
        "parse_effort",
        "passes",
        "price_of",
        "run_loop",
        "timestamp",
        "tool",
    ],
    "machine.grade": [
        "Batch",
        "CheckGrader",
        "Criterion",
        "DEFAULT_JUDGE_EFFORT",
        "DEFAULT_JUDGE_MODEL",
        "Evaluator",
        "GradeContext",
        "Grader",
        "Jev",
        "JevGrader",
        "JudgeGrader",
        "PanelGrader",
        "Rubric",
        "check",
        "define_evaluator",
        "define_rubric",
        "jev",
        "judge",
        "judge_panel",
        "transcript",
        "unscored",
    ],
    "machine.spec": [
        "Baseline",
        "Book",
        "Case",
        "Counterpart",
        "CriterionFigures",
        "DEFAULT_MIN_Z",
        "GateOutcome",
        "GateReport",
        "Machine",
        "MachineLoader",
        "ReasonCount",
        "SideFigures",
        "UNRECORDED",
        "Version",
        "VersionStatus",
        "count_reasons",
        "define_child",
        "define_machine",
        "discover",
        "identity_of",
        "instructions_from",
        "load_cases",
        "machine_at",
        "model_from",
        "open_book",
        "version_label",
    ],
    "machine.workspace": [
        "Adapters",
        "Conversation",
        "Ending",
        "Workspace",
        "converse",
        "counterpart_of",
        "workspace_root",
    ],
    "machine.measure": [
        "AgreementReport",
        "AtThreshold",
        "BASE_PASS_RATES",
        "BatchWriter",
        "CaseResult",
        "Comparison",
        "CriterionResult",
        "Disagreement",
        "FamilyReport",
        "Pair",
        "Plan",
        "REFERENCE_PASS",
        "Side",
        "Skipped",
        "SuiteReport",
        "SuiteSummary",
        "THRESHOLDS",
        "agree",
        "changes_between",
        "compare",
        "family",
        "find_suite",
        "is_result",
        "run_family",
        "run_pool",
        "run_suite",
        "stats",
        "suite_key",
        "tally_criteria",
    ],
    "machine.versions": [
        "Candidate",
        "SideTally",
        "VersionList",
        "commit",
        "current",
        "format_report",
        "gate",
        "live_history",
        "measured",
        "propose",
        "revert",
        "texts_of",
        "update",
        "versions",
    ],
    "machine.ops": [
        "ALLOWANCE_ENV",
        "CASES_NAME",
        "Consent",
        "CriterionInfo",
        "MAX_BUDGET_ENV",
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
        "cases_files",
        "default_harness_name",
        "describe",
        "list_machines",
        "load",
        "local_sandboxes",
        "make_harness",
        "model_access",
        "open_workspace",
        "plan_suite",
        "run_planned",
    ],
    "machine.cli": [
        "cli",
        "main",
    ],
    "machine.clients": [
        "HARNESSES",
        "default_harness_name",
        "make_harness",
    ],
    "machine.sandboxes": [
        "ExecResult",
        "FILE_TOOLS",
        "IsolationReport",
        "Limits",
        "LocalSandbox",
        "Mount",
        "SandboxEscape",
        "bubblewrap",
        "edit_file",
        "list_files",
        "read_file",
        "run",
        "search_files",
        "web_fetch",
        "write_file",
    ],
    "machine.sandboxes.tools": [
        "FILE_TOOLS",
        "FetchError",
        "FetchRefused",
        "IPAddress",
        "Page",
        "Policy",
        "Resolver",
        "edit_file",
        "fetch",
        "html_to_text",
        "is_public_address",
        "list_files",
        "make_web_fetch",
        "public_only",
        "read_file",
        "resolve_host",
        "run",
        "search_files",
        "web_fetch",
        "write_file",
    ],
}


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


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_each_subpackage_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == SUBPACKAGES[package]
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


def _doc(value: object) -> str | None:
    """The docstring a name has of its own (a dataclass's generated signature is not one)."""
    if isinstance(value, types.ModuleType):
        return value.__doc__
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__")
        return None if doc is None or doc.startswith(value.__name__ + "(") else doc
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return value.__doc__
    return "a value"  # constants and type aliases carry no docstring of their own at run time


@pytest.mark.parametrize("package", ["machine", *sorted(SUBPACKAGES)])
def test_every_public_name_has_a_docstring(package: str) -> None:
    module = importlib.import_module(package)
    undocumented = [name for name in module.__all__ if not (_doc(getattr(module, name)) or "").strip()]
    assert not undocumented, f"public names of {package} without a docstring: {undocumented}"
