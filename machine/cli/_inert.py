"""Text that others wrote, made inert before a terminal shows it: ``machine.runs.inert`` (every face shows
such text, so the one implementation lives in the core), named here for the commands that print."""

from __future__ import annotations

from machine.runs import inert, inert_json

__all__ = ["inert", "inert_json"]
