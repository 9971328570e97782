"""``bye``, a machine on a local model (the tiny one a test makes) whose rule is to end with "bye!", with
cases, held-out cases and a scripted teacher whose every reply keeps the rule."""

from __future__ import annotations

import json
from pathlib import Path

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, model_from

rubric = define_rubric({"signed": "The reply ends with bye!"})

machine = define_machine(
    name="bye",
    intent="Sign off.",
    instructions="Answer briefly.",
    model=model_from(__file__, "local:MODEL"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"signed": check("signed", lambda run: run.output.endswith("bye!"))}),
    max_steps=1,
)
"""


def write_bye(root: Path, model: Path, *, cases: int = 3, held_out: str = "hello 9") -> Path:
    """The machine ``bye`` on ``model`` with ``cases`` cases and one held-out case; the teacher's script."""
    folder = root / "machines" / "bye"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY.replace("MODEL", str(model)), encoding="utf-8")
    listed = [{"id": f"c{i}", "input": f"hello {i}"} for i in range(cases)]
    (folder / "cases.json").write_text(json.dumps(listed), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps([{"id": "h", "input": held_out}]), encoding="utf-8")
    rules = [{"match": ".", "turns": [{"text": "thanks, bye!"}]}]
    script = root / "teacher.json"
    script.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return script
