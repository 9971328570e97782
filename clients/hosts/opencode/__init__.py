"""The opencode harness: runs go through ``opencode serve``, the run's tools reach it over MCP.

Split by idea: the server, the admission of runs, the event watch, the mapping of messages, the
run's result read from them, the harness.
"""

from __future__ import annotations

from ._harness import INSTALL, MAX_RETRIES, OpencodeHarness
from ._mapping import MCP_NAME, emit_step, step_messages
from ._result import to_result

__all__ = ["INSTALL", "MAX_RETRIES", "MCP_NAME", "OpencodeHarness", "emit_step", "step_messages", "to_result"]
