"""``machine.load`` of a machine whose model is ``local:...`` runs it on the local harness, as the command
line does, unless a harness is named."""

from __future__ import annotations

from pathlib import Path

import pytest

import machine

MACHINE_PY = """
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"said": {"description": "Says something.", "weight": 1}})
machine = define_machine(
    name="tiny",
    intent="Say something.",
    instructions="Say something.",
    model="local:/nowhere/model",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"said": check("said", lambda r: bool(r.output))}),
)
"""


def test_a_local_model_picks_the_local_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    folder = tmp_path / "machines" / "tiny"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
    assert machine.load("tiny", workspace=tmp_path).workspace.harness.name == "local"
    assert machine.load("tiny", workspace=tmp_path, harness="echo").workspace.harness.name == "echo"
    monkeypatch.setenv("MACHINE_HARNESS", "echo")
    assert machine.load("tiny", workspace=tmp_path).workspace.harness.name == "echo"
