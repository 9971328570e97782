"""The dashboard: a live web view of a workspace's runs, scorecards, spend, comparisons and training,
served on loopback by ``machine dashboard``; its JSON endpoints serve scripts too (docs/dashboard.md)."""

# Imported by its path (``import dashboard`` from the repository root), this folder would load its modules
# a second time beside those of machine.dashboard, with a second copy of each class.
if __name__ != "machine.dashboard":
    raise ImportError(
        f"{__name__!r} is the folder of machine.dashboard, imported by its path: import machine.dashboard"
    )

from ._app import build_app
from ._events import MAX_STREAMS
from ._serve import DEFAULT_PORT, STREAMS_ENV, TOKEN_ENV, serve_dashboard

__all__ = ["DEFAULT_PORT", "MAX_STREAMS", "STREAMS_ENV", "TOKEN_ENV", "build_app", "serve_dashboard"]
