"""What a run is and what drives it: run records and scorecards, tools and the sandboxes they act in,
the harness protocol and the shared agent loop, effort, prices and budgets, provenance, and the store.

Adapters (``machine.clients``, ``machine.sandboxes``) build on this package and ``machine.errors`` alone.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._budget import Budget, Reservation, parse_budget
    from ._effort import LEVELS, Effort, parse_effort
    from ._files import atomic_text, confined, open_new, write_atomic
    from ._harness import (
        Event,
        EventType,
        Harness,
        HarnessRequest,
        HarnessResult,
        ModelAccess,
        Turn,
        run_seed,
    )
    from ._hub import hub_access, offline_hub
    from ._local_chat import FORMAT as LOCAL_CHAT_FORMAT
    from ._local_chat import chat_messages as local_chat_messages
    from ._local_chat import parse_reply as parse_local_reply
    from ._local_chat import prompt_text as local_prompt_text
    from ._loop import NextTurn, call_tool, run_loop
    from ._names import NAME_SEGMENT, check_name
    from ._openai import openai_tools, to_openai
    from ._pricing import (
        FREE_HARNESSES,
        LOCAL,
        TINKER_PRICES,
        TINKER_TRAIN_PRICES,
        TRAINING,
        Price,
        is_free,
        price_of,
    )
    from ._project import TEST_NAME, RunnerOutcome, alone, final_files, runner_outcome, sandbox_path
    from ._provenance import git_revision, library_version
    from ._records import (
        CriterionScore,
        Message,
        Model,
        Record,
        Run,
        Scorecard,
        Tag,
        Timings,
        ToolCall,
        Usage,
        new_run_id,
        now,
        passes,
        timestamp,
    )
    from ._rows import ChatSession, RunSummary, SuiteRecord
    from ._sandbox import Sandbox, Sandboxes
    from ._secrets import SECRET_WORDS, Redactor
    from ._store import SQLiteStore, Store
    from ._tools import Tool, ToolContext, ToolFailure, tool
    from ._trainer import (
        Checkpoint,
        Prepared,
        StepMetrics,
        Trainer,
        TrainExample,
        TrainSettings,
        refuse_untaken,
    )

_HOMES = {
    "Budget": "._budget",
    "Reservation": "._budget",
    "parse_budget": "._budget",
    "LEVELS": "._effort",
    "Effort": "._effort",
    "parse_effort": "._effort",
    "atomic_text": "._files",
    "confined": "._files",
    "open_new": "._files",
    "write_atomic": "._files",
    "Event": "._harness",
    "EventType": "._harness",
    "Harness": "._harness",
    "HarnessRequest": "._harness",
    "HarnessResult": "._harness",
    "ModelAccess": "._harness",
    "Turn": "._harness",
    "run_seed": "._harness",
    "hub_access": "._hub",
    "offline_hub": "._hub",
    "LOCAL_CHAT_FORMAT": "._local_chat:FORMAT",
    "local_chat_messages": "._local_chat:chat_messages",
    "parse_local_reply": "._local_chat:parse_reply",
    "local_prompt_text": "._local_chat:prompt_text",
    "NextTurn": "._loop",
    "call_tool": "._loop",
    "run_loop": "._loop",
    "NAME_SEGMENT": "._names",
    "check_name": "._names",
    "openai_tools": "._openai",
    "to_openai": "._openai",
    "FREE_HARNESSES": "._pricing",
    "LOCAL": "._pricing",
    "TINKER_PRICES": "._pricing",
    "TINKER_TRAIN_PRICES": "._pricing",
    "TRAINING": "._pricing",
    "Price": "._pricing",
    "is_free": "._pricing",
    "price_of": "._pricing",
    "TEST_NAME": "._project",
    "RunnerOutcome": "._project",
    "alone": "._project",
    "final_files": "._project",
    "runner_outcome": "._project",
    "sandbox_path": "._project",
    "git_revision": "._provenance",
    "library_version": "._provenance",
    "CriterionScore": "._records",
    "Message": "._records",
    "Model": "._records",
    "Record": "._records",
    "Run": "._records",
    "Scorecard": "._records",
    "Tag": "._records",
    "Timings": "._records",
    "ToolCall": "._records",
    "Usage": "._records",
    "new_run_id": "._records",
    "now": "._records",
    "passes": "._records",
    "timestamp": "._records",
    "ChatSession": "._rows",
    "RunSummary": "._rows",
    "SuiteRecord": "._rows",
    "Sandbox": "._sandbox",
    "Sandboxes": "._sandbox",
    "SECRET_WORDS": "._secrets",
    "Redactor": "._secrets",
    "SQLiteStore": "._store",
    "Store": "._store",
    "Tool": "._tools",
    "ToolContext": "._tools",
    "ToolFailure": "._tools",
    "tool": "._tools",
    "Checkpoint": "._trainer",
    "Prepared": "._trainer",
    "StepMetrics": "._trainer",
    "Trainer": "._trainer",
    "TrainExample": "._trainer",
    "TrainSettings": "._trainer",
    "refuse_untaken": "._trainer",
}
"""The module each public name is defined in."""

__all__ = [
    "FREE_HARNESSES",
    "LEVELS",
    "LOCAL",
    "LOCAL_CHAT_FORMAT",
    "NAME_SEGMENT",
    "SECRET_WORDS",
    "TEST_NAME",
    "TINKER_PRICES",
    "TINKER_TRAIN_PRICES",
    "TRAINING",
    "Budget",
    "ChatSession",
    "Checkpoint",
    "CriterionScore",
    "Effort",
    "Event",
    "EventType",
    "Harness",
    "HarnessRequest",
    "HarnessResult",
    "Message",
    "Model",
    "ModelAccess",
    "NextTurn",
    "Prepared",
    "Price",
    "Record",
    "Redactor",
    "Reservation",
    "Run",
    "RunSummary",
    "RunnerOutcome",
    "SQLiteStore",
    "Sandbox",
    "Sandboxes",
    "Scorecard",
    "StepMetrics",
    "Store",
    "SuiteRecord",
    "Tag",
    "Timings",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "TrainExample",
    "TrainSettings",
    "Trainer",
    "Turn",
    "Usage",
    "alone",
    "atomic_text",
    "call_tool",
    "check_name",
    "confined",
    "final_files",
    "git_revision",
    "hub_access",
    "is_free",
    "library_version",
    "local_chat_messages",
    "local_prompt_text",
    "new_run_id",
    "now",
    "offline_hub",
    "open_new",
    "openai_tools",
    "parse_budget",
    "parse_effort",
    "parse_local_reply",
    "passes",
    "price_of",
    "refuse_untaken",
    "run_loop",
    "run_seed",
    "runner_outcome",
    "sandbox_path",
    "timestamp",
    "to_openai",
    "tool",
    "write_atomic",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
