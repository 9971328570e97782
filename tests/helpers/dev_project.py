"""A scripted dev machine and a temporary git project for the tests of approval of changes to a person's
files (``--edits``): the machine edits app.py, writes a new file and a file holding escape sequences, and
(``run``) runs a command; each face asks about those changes its own way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric
from machine.sandboxes.tools import edit_file, read_file, run, write_file

rubric = define_rubric({"done": "Did it."})
machine = define_machine(
    name="dev",
    intent="Changes the project it is run in.",
    instructions="Do what you are told to the project's files.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"done": check("done", lambda run: True)}),
    tools=[read_file, write_file, edit_file, run],
)
"""
ORIGINAL = "def greet():\n    return 'hi'\n"
HOSTILE = "plain line\n\x1b]0;owned\x07\x1b[2Jcleared\n"
"""A file a model proposes that would retitle the window and clear the screen, were it obeyed."""


def turns(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [*({"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls), {"text": "done"}]


SCRIPT = {
    "rules": [
        {
            "match": "again",
            "turns": turns(
                ("edit_file", {"path": "app.py", "old": "'hi'", "new": "'hello'"}),
                ("edit_file", {"path": "app.py", "old": "'hi'", "new": "'hey'"}),
            ),
        },
        {
            "match": "command",
            "turns": turns(
                ("run", {"command": "touch made.txt"}), ("write_file", {"path": "b.txt", "content": "b"})
            ),
        },
        {
            "match": ".*",
            "turns": turns(
                ("edit_file", {"path": "app.py", "old": "'hi'", "new": "'hello'"}),
                ("write_file", {"path": "notes/new.txt", "content": "a new file\n"}),
                ("write_file", {"path": "shown.txt", "content": HOSTILE}),
            ),
        },
    ]
}


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace with the dev machine and its script, and a git project holding app.py."""
    ws = tmp_path / "ws"
    (ws / "machines" / "dev").mkdir(parents=True)
    (ws / "machines" / "dev" / "machine.py").write_text(MACHINE_PY)
    script = ws / "script.json"
    script.write_text(json.dumps(SCRIPT))
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(ORIGINAL)
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    return ws, script, project
