"""The workspace: a folder of machines with its store, where every run of every face is made, priced,
graded and stored, and where a machine and its counterpart hold conversations."""

from ._adapters import Adapters
from ._conversation import Conversation, Ending, converse, counterpart_of
from ._files import CASES_NAME, cases_files, folder_cases_file
from ._harness import harness_name, made_harness
from ._holdout import HeldOut, held_out
from ._workspace import Workspace, workspace_root

__all__ = [
    "CASES_NAME",
    "Adapters",
    "Conversation",
    "Ending",
    "HeldOut",
    "Workspace",
    "cases_files",
    "converse",
    "counterpart_of",
    "folder_cases_file",
    "harness_name",
    "held_out",
    "made_harness",
    "workspace_root",
]
