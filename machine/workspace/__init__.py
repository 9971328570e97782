"""The workspace: a folder of machines with its store, where every run of every face is made, priced,
graded and stored, and where a machine and its counterpart hold conversations."""

from ._conversation import Conversation, Ending, converse, counterpart_of
from ._workspace import Adapters, Workspace, workspace_root

__all__ = ["Adapters", "Conversation", "Ending", "Workspace", "converse", "counterpart_of", "workspace_root"]
