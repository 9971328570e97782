"""The workspace: a folder of machines with its store, where every run of every face is made, priced,
graded and stored, and where a machine and its counterpart hold conversations."""

from ._conversation import Conversation, Ending, converse, counterpart_of
from ._holdout import HeldOut, held_out
from ._workspace import Adapters, Workspace, workspace_root

__all__ = [
    "Adapters",
    "Conversation",
    "Ending",
    "HeldOut",
    "Workspace",
    "converse",
    "counterpart_of",
    "held_out",
    "workspace_root",
]
