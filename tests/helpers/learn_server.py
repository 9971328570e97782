"""Scripts for the learning tools of ``machine serve`` on the server tests' copy of ``red``: one where the
author machine writes the child ``red/noted`` and its cases (then red's own rules make the sample runs),
one where the optimizer proposes instructions that fix red (its live instructions call the tool on every
message), and the ``caps`` workspace ``train`` is tested on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.env import REPO
from helpers.training import TRAIN_CASES, make_caps

CHILD = '''\
"""red/noted: flags red, and says it noted it."""

from machine import check, define_child, define_evaluator, instructions_from

from ..machine import machine as parent
from .rubric import rubric


def says_noted(run):
    said = "noted" in run.output.lower()
    return said, "the reply says it noted it" if said else "the reply does not say it noted anything"


machine = define_child(
    parent,
    name="red/noted",
    intent="Flag red with the tool, and say so in the reply.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"noted": check("says_noted", says_noted)}),
)
'''
CHILD_RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({"noted": {"description": "The reply says red was noted.", "weight": 1}})
"""
CHILD_CASES = [
    {"id": "roses", "input": "Red sky at night, shepherd's delight.", "red": True},
    {"id": "barred", "input": "The gate was barred shut.", "red": False},
    {"id": "flag", "input": "Wave the red flag now.", "red": True},
    {"id": "credo", "input": "That is my credo in life.", "red": False},
]
PROPOSAL = "Call the tool only when the standalone word appears; otherwise answer without calling it."
ALWAYS_CALLS = [{"tool_calls": [{"name": "red_mentioned", "arguments": {}}]}, {"text": "noted"}]


def red_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = json.loads(
        (REPO / "machines" / "red" / "script.json").read_text(encoding="utf-8")
    )["rules"]
    return rules


def author_script(path: Path) -> Path:
    """The author writes red/noted and the four cases; red answers as its own script says."""
    files = "\n".join(
        f'<file path="{name}">\n{text}</file>'
        for name, text in (
            ("machine.py", CHILD),
            ("rubric.py", CHILD_RUBRIC),
            ("instructions.md", "Flag red, and say you noted it.\n"),
        )
    )
    cases = "".join(f"<case>{json.dumps(case)}</case>\n" for case in CHILD_CASES)
    author = [
        {"match": "Write the child machine 'red/noted'", "turns": [{"text": "The child.\n" + files}]},
        {"match": r"List \d+ different situations", "turns": [{"text": "<topic>colour words</topic>"}]},
        {"match": r"Write \d+ cases for red/noted", "turns": [{"text": cases}]},
    ]
    path.write_text(json.dumps({"rules": author + red_rules()}), encoding="utf-8")
    return path


def optimizer_script(path: Path) -> Path:
    """The optimizer proposes ``PROPOSAL``; red answers right under it, and calls the tool on every
    message under its live instructions (right only where the message says red)."""
    reply = f"It called the tool on every message.\n<instructions>\n{PROPOSAL}\n</instructions>"
    fixed = [{**rule, "instructions": "standalone"} for rule in red_rules()]
    rules = [
        {"match": "^# The machine: red", "turns": [{"text": reply}]},
        *fixed,
        {"match": "(?s).*", "turns": ALWAYS_CALLS},
    ]
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def caps_workspace(root: Path) -> Path:
    """``caps`` to train, and a script that answers its training cases right and anything else wrongly."""
    make_caps(root)
    rules = [{"match": f"^{c['input']}$", "turns": [{"text": c["input"].upper()}]} for c in TRAIN_CASES]
    script = {"rules": [*rules, {"match": ".", "turns": [{"text": "no idea"}]}]}
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    return root / "script.json"
