"""The ``when`` workspace for optimize through the console script: a machine that answers "what is the day
after DATE?", checked for the answer written as YYYY-MM-DD, its versions recorded and committed to git, and
a script for the scripted harness that plays both the machine and the optimizer (see
tests/cli/test_cli_optimize.py for what each proposal scores)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.git import git

Command = Callable[..., subprocess.CompletedProcess[str]]

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, instructions_from


def _iso(run, case):
    got = run.output.strip()
    if got == case["answer"]:
        return True, f"answered {got}"
    return False, f"answered {got!r}, not {case['answer']} written as YYYY-MM-DD"


rubric = define_rubric({"iso": "The reply is the day asked for, written as YYYY-MM-DD."})

machine = define_machine(
    name="when",
    intent="Say which day comes after a given date.",
    instructions=instructions_from(__file__),
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"iso": check("iso_date", _iso)}),
)
"""

LIVE = "Answer with the day after the date you are given.\n"
PROPOSAL = "Answer with the day after the date you are given, written as YYYY-MM-DD and nothing else."
EXPLANATION = "The failing runs wrote the day in words; the grader reads only YYYY-MM-DD, so I asked for it."

# id: (the date asked about, the answer, what the live instructions get, held out?)
DAYS: dict[str, tuple[str, str, str, bool]] = {
    "a": ("2024-01-01", "2024-01-02", "2024-01-02", False),
    "b": ("2024-02-28", "2024-02-29", "February 29, 2024", False),
    "c": ("2024-03-31", "2024-04-01", "April 1, 2024", False),
    "d": ("2024-12-31", "2025-01-01", "January 1, 2025", False),
    "g": ("2024-05-31", "2024-06-01", "June 1, 2024", False),
    "h": ("2024-07-31", "2024-08-01", "August 1, 2024", False),
    "i": ("2024-10-31", "2024-11-01", "November 1, 2024", False),
    "e": ("2023-06-30", "2023-07-01", "July 1, 2023", True),
    "f": ("2023-09-30", "2023-10-01", "2023-10-01", True),
    "j": ("2023-01-31", "2023-02-01", "February 1, 2023", True),
    "k": ("2023-02-28", "2023-03-01", "March 1, 2023", True),
    "l": ("2023-04-30", "2023-05-01", "May 1, 2023", True),
    "m": ("2023-08-31", "2023-09-01", "September 1, 2023", True),
    "n": ("2023-11-30", "2023-12-01", "December 1, 2023", True),
}
FAILING = {c for c, (_, answer, live, _) in DAYS.items() if live != answer and c in "abcdghi"}


def script(
    fixes: str = "".join(DAYS), wrong_held_out: bool = False, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """The optimizer's rule, then for each case a rule for instructions that ask for YYYY-MM-DD (the
    right answer in that form for the cases in ``fixes``; a wrong day for held-out ones when
    ``wrong_held_out``), then the live answer."""
    reply = f"{EXPLANATION}\n<instructions>\n{PROPOSAL}\n</instructions>"
    rules: list[dict[str, Any]] = [{"match": "^# The machine: when", "turns": [{"text": reply}]}]
    extra = {"usage": usage} if usage else {}
    for case, (day, answer, live, held) in DAYS.items():
        iso = "1999-01-01" if held and wrong_held_out else answer if case in fixes else live
        rules.append({"match": day, "instructions": "YYYY-MM-DD", "turns": [{"text": iso, **extra}]})
        rules.append({"match": day, "turns": [{"text": live, **extra}]})
    return {"rules": rules}


class Folder:
    """The workspace: ``when`` with its cases and held-out cases, its versions recorded and committed."""

    def __init__(self, root: Path, machine: Command) -> None:
        self.root, self.machine_cmd = root, machine
        self.folder = root / "machines" / "when"
        self.folder.mkdir(parents=True)
        (self.folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
        (self.folder / "instructions.md").write_text(LIVE, encoding="utf-8")
        cases = [
            {"id": c, "input": f"What is the day after {d[0]}?", "answer": d[1]} for c, d in DAYS.items()
        ]
        held = {c for c, d in DAYS.items() if d[3]}
        (self.folder / "cases.json").write_text(json.dumps([c for c in cases if c["id"] not in held]))
        (self.folder / "holdout.json").write_text(json.dumps([c for c in cases if c["id"] in held]))
        (root / ".gitignore").write_text(".machine/\n__pycache__/\nscript.json\n", encoding="utf-8")
        self.write_script(script())
        self.run("versions", "when")  # v1 is recorded before the first commit
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "when")

    @property
    def instructions(self) -> str:
        return (self.folder / "instructions.md").read_text(encoding="utf-8")

    def write_script(self, data: dict[str, Any]) -> Path:
        path = self.root / "script.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def status(self) -> str:
        return git(self.root, "status", "--porcelain")

    def run(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = self.machine_cmd(*args, "--workspace", self.root)
        assert done.returncode == code, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return done

    def optimize(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        scripted = ("--harness", "scripted", "--script", str(self.root / "script.json"))
        return self.run("optimize", "when", "--trials", "2", "--rounds", "1", *scripted, *args, code=code)
