"""Sandboxes: where a run's tools act."""

from ._local import LocalSandbox

__all__ = ["LocalSandbox"]
