"""The ``machine`` command: parse, call the operations, render."""

from ._app import cli, main

__all__ = ["cli", "main"]
