"""The workspace: a folder of machines with its store, where every run of every face is made, priced,
graded and stored, and where a machine and its counterpart hold conversations.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._adapters import Adapters
    from ._conversation import Conversation, Ending, converse, counterpart_of
    from ._executor import EXECUTORS, HERE, Executor, ExecutorEntry, ExecutorSetup, RunOrder
    from ._files import CASES_NAME, cases_files, folder_cases_file
    from ._harness import harness_name, made_harness
    from ._holdout import HeldOut, held_out
    from ._tags import observed_runs, observing, set_observing, tag_run, tagged_runs
    from ._workspace import Workspace, workspace_root

_HOMES = {
    "Adapters": "._adapters",
    "Conversation": "._conversation",
    "Ending": "._conversation",
    "converse": "._conversation",
    "counterpart_of": "._conversation",
    "Executor": "._executor",
    "EXECUTORS": "._executor",
    "ExecutorEntry": "._executor",
    "ExecutorSetup": "._executor",
    "HERE": "._executor",
    "RunOrder": "._executor",
    "CASES_NAME": "._files",
    "cases_files": "._files",
    "folder_cases_file": "._files",
    "harness_name": "._harness",
    "made_harness": "._harness",
    "HeldOut": "._holdout",
    "held_out": "._holdout",
    "observed_runs": "._tags",
    "observing": "._tags",
    "set_observing": "._tags",
    "tag_run": "._tags",
    "tagged_runs": "._tags",
    "Workspace": "._workspace",
    "workspace_root": "._workspace",
}
"""The module each public name is defined in."""

__all__ = [
    "CASES_NAME",
    "EXECUTORS",
    "HERE",
    "Adapters",
    "Conversation",
    "Ending",
    "Executor",
    "ExecutorEntry",
    "ExecutorSetup",
    "HeldOut",
    "RunOrder",
    "Workspace",
    "cases_files",
    "converse",
    "counterpart_of",
    "folder_cases_file",
    "harness_name",
    "held_out",
    "made_harness",
    "observed_runs",
    "observing",
    "set_observing",
    "tag_run",
    "tagged_runs",
    "workspace_root",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
