"""The library's standard tools by name, as the core takes them (the ``tools`` part of the
``machine.parts`` entry points): the file tools, ``run`` and ``web_fetch``."""

from __future__ import annotations

from machine.runs import Tool

from .tools import FILE_TOOLS, run, web_fetch


def library_tools() -> dict[str, Tool]:
    """The library's standard tools by name, as they ship."""
    return {tool.name: tool for tool in (*FILE_TOOLS, run, web_fetch)}


__all__ = ["library_tools"]
