"""Preference pairs: ``export --pairs`` from a real store, on the calc machine. A good mark (or a passing
grade) over a bad one (or a failing grade) on the same prompt; a corrected run over the run it corrects;
held-out runs kept out; secrets redacted; and no pair an error that says how to make some."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers.learn_runs import graded, read_rows, write_calc

from machine import Workspace, open_workspace
from machine.errors import BadInputError
from machine.learn import export
from machine.ops import fork
from machine.runs import Tag

PROMPT = [
    {"role": "system", "content": "Use the tools, then give the number alone."},
    {"role": "user", "content": "add 2 and 3"},
]


def pairs(ws: Workspace, tmp_path: Path, **options: object) -> list[dict[str, object]]:
    out = tmp_path / "pairs.jsonl"
    report = export(ws, "calc", out=out, pairs=True, **options)
    rows = read_rows(out)
    assert report.rows == len(rows) and report.pairs is not None and sum(report.pairs.values()) == len(rows)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    return rows


def test_a_good_run_over_a_bad_one_on_the_same_prompt(ws: Workspace, tmp_path: Path) -> None:
    liked = graded(ws, "sum", 0.0, tags=[Tag(kind="good", answer="5")])  # a mark decides over the grade
    passing = graded(ws, "sum", 1.0, minutes=1)
    disliked = graded(ws, "sum", 1.0, minutes=2, tags=[Tag(kind="bad", note="no number")])
    failing = graded(ws, "sum", 0.0, minutes=3)
    other = graded(ws, "half", 1.0)  # only good runs of this prompt: no pair
    ws.store.put_many([liked, passing, disliked, failing, other])
    rows = pairs(ws, tmp_path)
    assert [(r["chosen"], r["rejected"]) for r in rows] == [
        ([{"role": "assistant", "content": "5"}], [{"role": "assistant", "content": "answer 1.0"}]),
        ([{"role": "assistant", "content": "answer 1.0"}], [{"role": "assistant", "content": "answer 0.0"}]),
    ]
    assert all(r["prompt"] == PROMPT for r in rows)
    assert [(r["metadata"]["chosen_run_id"], r["metadata"]["rejected_run_id"]) for r in rows] == [
        (liked.id, disliked.id),
        (passing.id, failing.id),
    ]
    assert rows[0]["metadata"] == {
        "kind": "verdict", "machine": "calc", "case_id": "sum",
        "chosen_run_id": liked.id, "rejected_run_id": disliked.id,
    }  # fmt: skip


def test_each_run_of_a_prompt_is_paired_once_at_least(ws: Workspace, tmp_path: Path) -> None:
    good = [graded(ws, "sum", 1.0, minutes=i) for i in range(3)]
    bad = graded(ws, "sum", 0.0, minutes=5)
    ws.store.put_many([*good, bad])
    rows = pairs(ws, tmp_path)
    assert sorted(r["metadata"]["chosen_run_id"] for r in rows) == sorted(r.id for r in good)
    assert {r["metadata"]["rejected_run_id"] for r in rows} == {bad.id}


def test_held_out_runs_make_no_pair_unless_asked(ws: Workspace, tmp_path: Path) -> None:
    ws.store.put_many([graded(ws, "held", 1.0), graded(ws, "held", 0.0, minutes=1)])
    with pytest.raises(BadInputError, match="no preference pair in its 2 stored runs"):
        pairs(ws, tmp_path)
    assert not (tmp_path / "pairs.jsonl").exists()
    assert len(pairs(ws, tmp_path, include_holdout=True)) == 1


def test_a_secret_in_an_answer_is_redacted(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALC_API_KEY", "calc-secret-0123456789")
    leaky = graded(ws, "sum", 0.0, tags=[Tag(kind="good", answer="the key is calc-secret-0123456789")])
    ws.store.put_many([graded(ws, "sum", 0.0, minutes=1), leaky])
    [row] = pairs(ws, tmp_path)
    assert "calc-secret" not in json.dumps(row) and "[REDACTED:CALC_API_KEY]" in json.dumps(row)


async def test_a_corrected_run_is_preferred_over_the_run_it_corrects(tmp_path: Path) -> None:
    path = write_calc(tmp_path)
    rules = json.loads(path.read_text())
    rules["rules"].insert(0, {"match": "Correction: add with care", "turns": [{"text": "4"}]})
    path.write_text(json.dumps(rules))
    ws = open_workspace(tmp_path, harness="scripted", script=path, budget="none")
    original = await ws.run("calc", "add 1 and 3, carelessly")
    assert original.output == "7"
    corrected = await fork(ws, "add with care", original.id)
    assert corrected.forked_from == original.id and corrected.correction == "add with care"
    assert corrected.input == (
        "add 1 and 3, carelessly\n\nAn earlier answer to this was:\n7\n\nCorrection: add with care"
    )
    assert corrected.output == "4" and ws.store.get(corrected.id) == corrected
    [row] = pairs(ws, tmp_path)
    assert row["prompt"][1] == {"role": "user", "content": "add 1 and 3, carelessly"}
    assert (row["chosen"], row["rejected"]) == (
        [{"role": "assistant", "content": "4"}],
        [{"role": "assistant", "content": "7"}],
    )
    assert row["metadata"]["kind"] == "correction"
    ids = (row["metadata"]["chosen_run_id"], row["metadata"]["rejected_run_id"])
    assert ids == (corrected.id, original.id)
    ws.tag(ws.store.get(corrected.id), "bad", "still wrong")  # a correction marked bad is no preference
    with pytest.raises(BadInputError, match="no preference pair"):
        pairs(ws, tmp_path)


def test_pairs_are_of_one_machines_own_runs(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="leave out tree, source and per_turn"):
        export(ws, "calc", out=tmp_path / "p.jsonl", pairs=True, per_turn=True)
