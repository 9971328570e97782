"""signoff: its check, its scripted teacher (a run of every case, each signing off), and the held-out
cases the teacher never answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from machine import Run, Workspace, open_workspace, run_suite
from machine.clients.scripted import load_script

REPO = Path(__file__).resolve().parents[2]
SIGNOFF = REPO / "machines" / "signoff"


def graded(
    ws: Workspace, output: str, criterion: str = "signs_off", case: dict[str, object] | None = None
) -> tuple[float | None, str]:
    run = Run(machine="signoff", model="m", harness="echo", input="q", output=output, case=case)
    grade = anyio.run(lambda: ws.grade(run, store=False)).scorecard
    assert grade is not None
    found = grade.criteria[criterion]
    return found.score, found.reason


@pytest.mark.parametrize(
    ("output", "score"),
    [
        ("Grass is green. Aye!", 1.0),
        ("Grass is green. Aye!  \n", 1.0),
        ("Grass is green.", 0.0),
        ("Aye! Grass is green.", 0.0),
        ("Aye!", 0.0),
        ("", 0.0),
        ("Grass is green. aye!", 0.0),
    ],
)
def test_the_check(ws: Workspace, output: str, score: float) -> None:
    assert graded(ws, output)[0] == score


FIRE = {"id": "fire", "input": "Is fire hot or cold?", "answer": ["hot"], "wrong": ["cold"]}


@pytest.mark.parametrize(
    ("output", "score"),
    [
        ("Fire is hot. Aye!", 1.0),
        ("Fire is very HOT.", 1.0),
        ("Fire is cold. Aye!", 0.0),
        ("Fire is hot, never cold. Aye!", 0.0),
        ("A bicycle has eight wheels. Aye!", 0.0),
        ("Aye!", 0.0),
    ],
)
def test_the_answer_check(ws: Workspace, output: str, score: float) -> None:
    assert graded(ws, output, "answers", FIRE)[0] == score


def test_an_answer_with_no_case_to_check_is_unscored(ws: Workspace) -> None:
    assert graded(ws, "Fire is hot. Aye!", "answers") == (
        None,
        "the run's case names no answer to check against",
    )


def test_every_case_names_its_answer() -> None:
    for name in ("cases.json", "holdout.json"):
        cases = json.loads((SIGNOFF / name).read_text(encoding="utf-8"))
        assert all(c["answer"] and all(isinstance(w, str) for w in c["answer"]) for c in cases), name


def test_the_model_is_the_bundled_local_one(ws: Workspace) -> None:
    assert ws.load("signoff").model == "local:smollm2-135m"


def test_the_teacher_answers_every_case_and_no_held_out_one() -> None:
    rules = load_script(SIGNOFF / "script.json").rules
    cases = json.loads((SIGNOFF / "cases.json").read_text(encoding="utf-8"))
    held = json.loads((SIGNOFF / "holdout.json").read_text(encoding="utf-8"))

    assert all(sum(bool(re.search(r.match, c["input"])) for r in rules) == 1 for c in cases)
    assert not any(re.search(r.match, c["input"]) for r in rules for c in held)
    assert not {c["id"] for c in cases} & {c["id"] for c in held}


def test_the_teachers_suite_passes_every_case(tmp_path: Path) -> None:
    ws = open_workspace(
        REPO, data_dir=tmp_path / ".machine", harness="scripted", script=SIGNOFF / "script.json"
    )
    spec = ws.load("signoff")
    report = anyio.run(lambda: run_suite(ws, spec, ws.cases("signoff"), model="teacher"))
    assert report.pass_rate == 1.0
