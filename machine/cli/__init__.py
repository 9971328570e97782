"""The ``machine`` command."""

from __future__ import annotations


def main() -> None:
    from ._app import main as run

    run()
