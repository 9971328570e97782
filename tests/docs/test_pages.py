"""What the docs test covers and how the pages mark their blocks: every page with code is run, a
``set-up`` mark hides only this repository's own set-up, and every synopsis names real options."""

from __future__ import annotations

import re

import click
from helpers.doc_blocks import PAGES, REPO, Block, blocks

from machine.cli import cli

SET_UP = re.compile(r"^(make|pip|python3? -m (pip|venv)|\.venv/bin/pip|cd|git|source|\. )\b")
FLAG = re.compile(r"(?<![\w-])(--?[a-z][a-z-]*)")
PLACEHOLDER = re.compile(r"^[A-Z_]+$|^[\[<(]")


def _pages_with_code() -> set[str]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return {str(page.relative_to(REPO)) for page in pages if "```" in page.read_text()}


def test_every_page_with_code_is_run_by_a_docs_test() -> None:
    assert _pages_with_code() <= set(PAGES), sorted(_pages_with_code() - set(PAGES))


def test_set_up_marks_hide_only_the_repositorys_own_set_up() -> None:
    marked = [block for page in PAGES for block in blocks(page) if block.mark == "set-up"]
    assert marked, "README's set-up commands are marked"
    for block in marked:
        lines = [line.strip() for line in block.text.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith("#")]
        assert all(SET_UP.match(line) for line in lines), f"{block.where}: {lines}"


def _synopses() -> list[tuple[Block, str]]:
    """Each line of a plain block of docs/cli.md that is a ``machine ...`` synopsis, with its
    continuation lines joined on."""
    found = []
    for block in blocks("docs/cli.md"):
        if block.lang:
            continue
        for line in block.text.splitlines():
            if line.startswith("machine "):
                found.append((block, line))
            elif line.startswith(" ") and found and found[-1][0] is block and line.strip().startswith("["):
                found[-1] = (block, f"{found[-1][1]} {line.strip()}")
    return found


def _command(words: list[str]) -> click.Command:
    """The command a synopsis names: ``machine`` then subcommand words until a flag or placeholder."""
    command: click.Command = cli
    for word in words[1:]:
        if PLACEHOLDER.match(word) or word.startswith("-") or not isinstance(command, click.Group):
            break
        sub = command.get_command(click.Context(command), word)
        if sub is None:
            break
        command = sub
    return command


def test_every_synopsis_names_only_options_its_command_has() -> None:
    synopses = _synopses()
    assert len(synopses) > 20, len(synopses)
    for block, line in synopses:
        command = _command(line.split())
        assert command is not cli or line.startswith("machine [--workspace"), f"{block.where}: {line}"
        options = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
        if command is not cli:
            options |= {opt for param in cli.params for opt in param.opts}
        named = set(FLAG.findall(line))
        assert named <= options, f"{block.where}: {line!r} names {sorted(named - options)}"
