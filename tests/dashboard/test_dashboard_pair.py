"""Two runs side by side: steps aligned by what they do (a tool call made on one side only lines up
against a gap, and the steps after it stay aligned), scorecards merged by criterion (one a run lacks
said as such), texts, rows and criteria cut to bounds and said to be, the relation of the two named;
and ``GET /api/pair`` from a real ``machine dashboard``: its answer, a 400 naming what is missing, a 404
for an unknown run, a model's markup kept as a string."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from helpers.dashboard import Served
from helpers.pair_runs import (
    CORRECTION,
    FIX_ID,
    MARKUP,
    V1_ID,
    V2_ID,
    call,
    made,
    pair_runs,
    pair_workspace,
    result,
)

from machine.dashboard._pair import MAX_ROWS, STEPS_CHARS, TEXT_CHARS, pair, pairs
from machine.runs import Message

LIMIT_S = 10.0


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pair_workspace(tmp_path_factory.mktemp("ws"))


def test_an_extra_tool_call_on_one_side_lines_up_against_a_gap() -> None:
    v1, v2, _ = pair_runs()
    answer = pair(v1, v2)
    kinds = [row.kind for row in answer.rows]
    assert kinds == ["same", "same", "b_only", "b_only", "changed"]
    places = [(r.a and r.a.index, r.b and r.b.index) for r in answer.rows]
    assert places == [(0, 0), (1, 1), (None, 2), (None, 3), (2, 4)]
    assert answer.rows[2].b is not None and answer.rows[2].b.calls[0].name == "run_tests"
    # the other way round, the gaps are a's
    assert [row.kind for row in pair(v2, v1).rows] == ["same", "same", "a_only", "a_only", "changed"]


def test_a_different_tool_at_the_same_place_is_a_changed_row_and_the_answers_line_up() -> None:
    a = [call("search", 1, q="x"), result("search", 1, "hit"), Message(role="assistant", content="x")]
    b = [call("fetch", 1, url="u"), result("fetch", 1, "page"), Message(role="assistant", content="x")]
    assert pairs(a, b) == [(0, 0), (1, 1), (2, 2)]
    answer = pair(made("a", 1, trajectory=a), made("b", 2, trajectory=b))
    assert [row.kind for row in answer.rows] == ["changed", "changed", "same"]


def test_the_scorecards_merge_by_criterion_with_both_reasons() -> None:
    v1, v2, fixed = pair_runs()
    rows = {row.criterion: row for row in pair(v1, v2).criteria}
    assert list(rows) == ["correct", "tidy", "safe"]
    correct = rows["correct"]
    assert correct.a is not None and correct.b is not None and correct.diff == 1.0
    assert (correct.a.reason.text, correct.b.reason.text) == ("the tests were never run", "the tests pass")
    assert rows["tidy"].diff == -0.5
    assert rows["safe"].a is None and rows["safe"].b is not None and rows["safe"].diff is None
    ungraded = pair(v1, fixed)
    assert all(row.b is None for row in ungraded.criteria) and not ungraded.b.graded


def test_how_two_runs_relate_is_said() -> None:
    v1, v2, fixed = pair_runs()
    other = made("other", 1, input="something else", version="v1")
    stranger = made("stranger", 2).model_copy(update={"machine": "loud"})
    trial = v1.model_copy(update={"id": "again", "trial": 1})
    assert pair(v1, v2).relation == "versions" and pair(v1, v2).said == "case fix on two versions, v1 and v2"
    assert pair(v1, fixed).relation == "corrects" and pair(fixed, v1).relation == "corrected_by"
    assert pair(v1, fixed).b.correction is not None and pair(v1, fixed).b.correction.text == CORRECTION
    assert pair(v1, trial).relation == "trials"
    caseless = [run.model_copy(update={"case_id": None}) for run in (v1, trial)]
    assert pair(*caseless).relation == "prompt"
    assert pair(v1, other).relation == "unrelated" and pair(v1, stranger).relation == "machines"


def test_inputs_and_outputs_are_given_once_when_the_same() -> None:
    v1, v2, fixed = pair_runs()
    answer = pair(v1, v2)
    assert answer.input.same and answer.input.b is None and answer.input.a.text == v1.input
    assert not answer.output.same and answer.output.b is not None and answer.output.a.text == MARKUP
    assert not pair(v1, fixed).input.same


def test_long_texts_long_trajectories_and_many_criteria_are_cut_and_said_to_be() -> None:
    v1, v2, _ = pair_runs()
    long = "x" * (TEXT_CHARS + 5)
    steps = [Message(role="assistant", content=f"step {i} " + "y" * 5_000) for i in range(300)]
    big = v1.model_copy(update={"output": long, "trajectory": steps})
    answer = pair(big, v2)
    assert answer.output.a.cut and answer.output.a.chars == TEXT_CHARS + 5
    assert len(answer.output.a.text) == TEXT_CHARS
    assert len(answer.rows) == MAX_ROWS and answer.rows_cut > 0
    shown = sum(len(s.content.text) for row in answer.rows for s in (row.a, row.b) if s is not None)
    assert shown <= STEPS_CHARS
    assert any(row.a is not None and row.a.content.cut for row in answer.rows)
    both = pair(big, big.model_copy(update={"id": "twin"}))
    assert len(json.dumps(both.model_dump(mode="json"))) < 1_000_000  # bounded in bytes too


def get(served: Served, path: str) -> httpx.Response:
    return httpx.get(served.url.rstrip("/") + path, timeout=LIMIT_S)


@pytest.mark.slow
def test_the_pair_endpoint_answers_and_refuses_in_words(served: Served) -> None:
    answer = get(served, f"/api/pair?a={V1_ID}&b={V2_ID}")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert (body["relation"], body["a"]["id"], body["b"]["id"]) == ("versions", V1_ID, V2_ID)
    assert [r["kind"] for r in body["rows"]] == ["same", "same", "b_only", "b_only", "changed"]
    assert body["output"]["a"]["text"] == MARKUP  # a string in JSON; the page sets it as text
    assert get(served, f"/api/pair?a={FIX_ID}&b={V1_ID}").json()["relation"] == "corrected_by"
    missing = get(served, f"/api/pair?a={V1_ID}")
    assert missing.status_code == 400 and "give b" in missing.json()["error"]
    assert get(served, "/api/pair").json()["error"].startswith("a pair needs two run ids: give a and b")
    unknown = get(served, f"/api/pair?a={V1_ID}&b=nope")
    assert unknown.status_code == 404 and "there is no run 'nope'" in unknown.json()["error"]
