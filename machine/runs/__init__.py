"""What a run is and what drives it: run records and scorecards, tools and the sandboxes they act in,
the harness protocol and the shared agent loop, effort, prices and budgets, provenance, and the store.

Adapters (``machine.clients``, ``machine.sandboxes``) build on this package and ``machine.errors`` alone.
"""

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
from ._trainer import Checkpoint, Prepared, StepMetrics, Trainer, TrainExample, TrainSettings, refuse_untaken

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
