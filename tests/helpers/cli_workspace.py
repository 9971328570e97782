"""A small workspace of its own for every CLI test: ``greet`` (two checks, a judge criterion that is UNSCORED
in this build, a tool), its child ``greet/loud`` (one criterion and one tool of its own), ``plain`` (no
tools), the cases of ``greet`` and scripts for the scripted harness. Nothing here reads the repository's
machines folder."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine import Run, SQLiteStore
from machine.spec import TRUST_FILE, TrustBook, marked

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric(
    {
        "greets": {"description": "The reply says hello.", "weight": 2},
        "brief": {"description": "The reply is at most 20 characters long.", "weight": 1},
        "warm": "The reply sounds friendly.",
    }
)
"""

GREET_PY = """\
from machine import check, define_evaluator, define_machine, judge, tool

from .rubric import rubric


@tool
def shout(text: str) -> str:
    \"\"\"Return the text in capital letters.\"\"\"
    return text.upper()


def _brief(run):
    return 1.0 if len(run.output) <= 20 else 0.5


evaluator = define_evaluator(
    rubric,
    {
        "greets": check("says_hello", lambda run: "hello" in run.output.lower()),
        "brief": check("at_most_20", _brief),
        "warm": judge(),
    },
)

machine = define_machine(
    name="greet",
    intent="Greet the person named in the input.",
    instructions="Say hello to the person named in the input, briefly.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=evaluator,
    tools=[shout],
)
"""

LOUD_PY = """\
from machine import check, define_child, define_evaluator, define_rubric, tool

from ..machine import machine as parent

rubric = define_rubric({"capitals": {"description": "The reply is in capital letters.", "weight": 3}})


@tool
def count_letters(text: str) -> int:
    \"\"\"Count the letters in the text.\"\"\"
    return sum(ch.isalpha() for ch in text)


machine = define_child(
    parent,
    name="greet/loud",
    intent="Greet the person loudly.",
    instructions="Use capital letters only.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"capitals": check("all_caps", lambda run: run.output.isupper())}),
    tools=[count_letters],
)
"""

PLAIN_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="plain",
    intent="Repeat the input.",
    instructions="Repeat the input.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
)
"""

RAISING_CHECK = """\
from machine import check, define_evaluator, define_machine, judge

from .rubric import rubric


def _hello(run, case):
    return case["expected"] in run.output


machine = define_machine(
    name="greet",
    intent="Greet the person named in the input.",
    instructions="Say hello to the person named in the input, briefly.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "greets": check("says_hello", _hello),
            "brief": check("at_most_20", lambda run: True),
            "warm": judge(),
        },
    ),
)
"""
"""greet's machine.py with a check that raises (``KeyError``) on a case with no ``expected``."""

CASES = [
    {"id": "ann", "input": "greet ann"},  # calls the tool, then "hello ann": 1.0, passes
    {"id": "bob", "input": "greet bob"},  # a long hello: (2 + 0.5) / 3, fails at 1.0, passes at 0.5
    {"id": "cat", "input": "greet cat"},  # no hello: 1 / 3, fails at both
]

SCRIPT = {
    "rules": [
        {"match": "^hi", "turns": [{"text": "hello there"}]},
        {
            "match": "ann",
            "turns": [
                {"tool_calls": [{"name": "shout", "arguments": {"text": "hello ann"}}]},
                {"text": "hello ann"},
            ],
        },
        {"match": "bob", "turns": [{"text": "hello bob, what a long and lovely day it is"}]},
        {"match": "cat", "turns": [{"text": "go away"}]},
    ]
}

# Every turn uses 100,000 input tokens on the machine's model: $0.186 a run at Qwen3.8-27B's price.
COSTLY_SCRIPT = {"rules": [{"match": ".", "turns": [{"text": "hello", "usage": {"input_tokens": 100_000}}]}]}


@dataclass
class WorkspaceFolder:
    """The test workspace: its paths, and its store read from outside the command."""

    root: Path

    @property
    def machines(self) -> Path:
        return self.root / "machines"

    @property
    def script(self) -> Path:
        return self.root / "script.json"

    @property
    def costly_script(self) -> Path:
        return self.root / "costly.json"

    @property
    def db(self) -> Path:
        return self.root / ".machine" / "store.db"

    def count(self) -> int:
        """Rows in the store; 0 when no command has written one (the file may not exist yet)."""
        if not self.db.exists():
            return 0
        store = SQLiteStore(self.db)
        try:
            return store.count()
        finally:
            store.close()

    def runs(self, machine: str) -> list[Run]:
        """Every stored run of ``machine``, oldest first."""
        store = SQLiteStore(self.db)
        try:
            return list(store.iter_runs(machine))
        finally:
            store.close()

    def get(self, run_id: str) -> Run:
        store = SQLiteStore(self.db)
        try:
            return store.get(run_id)
        finally:
            store.close()

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def write_json(self, relative: str, value: Any) -> Path:
        return self.write(relative, json.dumps(value, indent=2))

    def write_as_model(self, machine: str, files: dict[str, str], *, by: str, mark: bool = False) -> None:
        """What specialize does with a child's code: ``files`` (names in machine ``machine``'s folder)
        recorded as written by a model, then written (``mark``: starting with the marking line)."""
        texts = {
            self.machines / machine / name: marked(text, by, machine) if mark else text
            for name, text in files.items()
        }
        TrustBook(self.root / ".machine" / TRUST_FILE, self.machines).record(machine, texts, by=by)
        for path, text in texts.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def write_workspace(root: Path) -> WorkspaceFolder:
    ws = WorkspaceFolder(root)
    ws.write("machines/greet/rubric.py", RUBRIC_PY)
    ws.write("machines/greet/machine.py", GREET_PY)
    ws.write("machines/greet/loud/machine.py", LOUD_PY)
    ws.write("machines/plain/machine.py", PLAIN_PY)
    ws.write_json("machines/greet/cases.json", CASES)
    ws.write_json("script.json", SCRIPT)
    ws.write_json("costly.json", COSTLY_SCRIPT)
    return ws


Command = Callable[..., subprocess.CompletedProcess[str]]
"""Runs the installed ``machine`` console script (the ``machine_cmd`` fixture)."""
