"""Export: stored graded runs as chat JSONL rows, through a real SQLite store, real machines and the
scripted harness; each filter, ``/good --as``, ``--from`` through a child's ``transform_reasoning``,
``--per-turn``, ``--tree``, the file's mode, and the error of an empty selection."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers.learn_runs import CASES, START, graded, read_rows

from machine import Workspace, open_workspace
from machine.errors import BadInputError
from machine.learn import export
from machine.learn.train import rows_of
from machine.measure import run_suite
from machine.runs import Tag, Timings
from machine.spec import Case

REPO = Path(__file__).resolve().parents[3]


async def suite(ws: Workspace, name: str = "calc", trials: int = 1) -> str:
    report = await run_suite(ws, ws.load(name), ws.cases(name), trials=trials)
    assert report.suite_id is not None
    return report.suite_id


def rows_by_case(path: Path) -> dict[str, dict[str, object]]:
    return {row["metadata"]["case_id"]: row for row in read_rows(path)}


async def test_row_shape(ws: Workspace, tmp_path: Path) -> None:
    await suite(ws)
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    assert (report.runs, report.rows, report.stored) == (2, 2, 3)  # "miss" answers 7, not 4
    rows = rows_by_case(tmp_path / "out.jsonl")
    assert set(rows) == {"sum", "half"}
    row = rows["sum"]
    assert set(row) == {"messages", "tools", "metadata"}
    system, user, call, result, answer = row["messages"]
    assert system == {"role": "system", "content": "Use the tools, then give the number alone."}
    assert user == {"role": "user", "content": "add 2 and 3"}
    assert call["content"] is None and call["reasoning_content"] == "I add 2 and 3."
    [tool_call] = call["tool_calls"]
    assert set(tool_call) == {"id", "type", "function"} and tool_call["type"] == "function"
    assert tool_call["function"]["name"] == "add"
    assert isinstance(tool_call["function"]["arguments"], str)
    assert json.loads(tool_call["function"]["arguments"]) == {"a": 2, "b": 3}
    assert result == {"role": "tool", "tool_call_id": tool_call["id"], "content": "5"}
    assert answer == {"role": "assistant", "content": "5", "reasoning_content": "The tool says 5."}
    tools = {t["function"]["name"]: t for t in row["tools"]}
    assert set(tools) == {"add", "divide"}
    assert tools["add"]["type"] == "function"
    assert tools["add"]["function"]["description"] == "Add two whole numbers."
    assert tools["add"]["function"]["parameters"]["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    }
    stored = {run.case_id: run for run in ws.store.iter_runs("calc")}
    assert row["metadata"] == {
        "run_id": stored["sum"].id,
        "machine": "calc",
        "version": stored["sum"].version,
        "case_id": "sum",
        "trial": 0,
        "score": 1.0,
        "model": "Qwen/Qwen3.8-27B",
        "harness": "scripted",
    }
    # the failed divide by zero stays in the conversation, as its error result
    half = rows["half"]["messages"]
    assert [m["role"] for m in half] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert "ZeroDivisionError" in half[3]["content"]


def test_system_is_the_instructions_the_run_was_given(ws: Workspace, tmp_path: Path) -> None:
    ws.store.put(graded(ws, "sum", 1.0, instructions="Older instructions, since rewritten."))
    export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    assert row["messages"][0] == {"role": "system", "content": "Older instructions, since rewritten."}


def test_good_alone_learns_the_input_and_the_final_answer(ws: Workspace, tmp_path: Path) -> None:
    """``/good``: the tool steps and the thinking are left out; ``--reasoning`` keeps the answer's."""
    run = graded(ws, "sum", 0.0, tags=[Tag(kind="good")])
    ws.store.put(run)
    export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    assert row["messages"][1:] == [
        {"role": "user", "content": "add 2 and 3"},
        {"role": "assistant", "content": "answer 0.0"},
    ]
    thinking = run.model_copy(update={"tags": [Tag(kind="good", reasoning=True)]})
    last = rows_of(thinking, ws.load("calc"))[0]["messages"][-1]
    assert last == {"role": "assistant", "content": "answer 0.0", "reasoning_content": "Done."}


def test_good_trace_learns_every_step_thinking_only_if_asked(ws: Workspace, tmp_path: Path) -> None:
    untagged = rows_of(graded(ws, "sum", 0.0), ws.load("calc"))[0]["messages"]
    for reasoning in (False, True):
        run = graded(ws, "sum", 0.0, tags=[Tag(kind="good", trace=True, reasoning=reasoning)])
        messages = rows_of(run, ws.load("calc"))[0]["messages"]
        expected = untagged if reasoning else [
            {k: v for k, v in m.items() if k != "reasoning_content"} for m in untagged
        ]  # fmt: skip
        assert messages == expected
    assert any("reasoning_content" in m for m in untagged)


def test_good_as_replaces_the_final_answer(ws: Workspace, tmp_path: Path) -> None:
    mark = Tag(kind="good", answer="5, by the add tool", trace=True, reasoning=True)
    run = graded(ws, "sum", 0.0, tags=[mark])
    ws.store.put(run)
    export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    last = row["messages"][-1]
    assert last["role"] == "assistant" and last["content"] == "5, by the add tool"
    assert "tool_calls" not in last
    untagged = rows_of(run.model_copy(update={"tags": []}), ws.load("calc"))[0]["messages"]
    assert row["messages"][:-1] == untagged[:-1]
    assert untagged[-1]["content"] == "answer 0.0"


def test_good_as_on_a_run_that_ended_calling_a_tool(ws: Workspace, tmp_path: Path) -> None:
    """The answer replaces the last assistant step; the tool results that followed it go with it, and so
    does the step's reasoning, which led to the run's own answer, not the person's."""
    run = graded(ws, "sum", 0.0, tags=[Tag(kind="good", answer="It is 3.")])
    run = run.model_copy(update={"trajectory": run.trajectory[:3]})  # stopped after the tool's result
    ws.store.put(run)
    export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    assert row["messages"][-1] == {"role": "assistant", "content": "It is 3."}


def test_a_bad_mark_keeps_a_run_out(ws: Workspace, tmp_path: Path) -> None:
    good, bad = graded(ws, "sum", 1.0), graded(ws, "half", 1.0, tags=[Tag(kind="bad")])
    ws.store.put_many([good, bad])
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    assert [r["metadata"]["run_id"] for r in read_rows(tmp_path / "out.jsonl")] == [good.id]
    assert report.funnel[-1].left == 1
    # the last mark counts: marked bad, then good again
    ws.store.put(bad.model_copy(update={"tags": [*bad.tags, Tag(kind="good")]}))
    assert export(ws, "calc", out=tmp_path / "out.jsonl").runs == 2


def test_tags_good_and_bad(ws: Workspace, tmp_path: Path) -> None:
    plain = graded(ws, "sum", 1.0)
    liked = graded(ws, "half", 0.0, tags=[Tag(kind="good")])  # a person's mark stands for the grade
    disliked = graded(ws, "miss", 1.0, tags=[Tag(kind="bad")])
    ws.store.put_many([plain, liked, disliked])
    ids = {}
    for tags in ("all", "good", "bad"):
        export(ws, "calc", out=tmp_path / f"{tags}.jsonl", tags=tags)
        ids[tags] = {r["metadata"]["run_id"] for r in read_rows(tmp_path / f"{tags}.jsonl")}
    assert ids == {"all": {plain.id, liked.id}, "good": {liked.id}, "bad": {disliked.id}}


def test_best_k_keeps_each_cases_best_best_first_then_newest(ws: Workspace, tmp_path: Path) -> None:
    runs = [
        graded(ws, "sum", 0.5, minutes=1),
        graded(ws, "sum", 1.0, minutes=2),
        graded(ws, "sum", 0.75, minutes=3),
        graded(ws, "sum", 1.0, minutes=4),  # ties with minute 2, and is newer
        graded(ws, "half", 0.6, minutes=5),
    ]
    ws.store.put_many(runs)
    export(ws, "calc", out=tmp_path / "out.jsonl", min_score=0.0, best=3)
    got = [(r["metadata"]["case_id"], r["metadata"]["score"]) for r in read_rows(tmp_path / "out.jsonl")]
    assert got == [("sum", 1.0), ("sum", 1.0), ("sum", 0.75), ("half", 0.6)]
    ids = [r["metadata"]["run_id"] for r in read_rows(tmp_path / "out.jsonl")]
    assert ids[:2] == [runs[3].id, runs[1].id]
    export(ws, "calc", out=tmp_path / "one.jsonl", min_score=0.0, best=1)
    assert [r["metadata"]["run_id"] for r in read_rows(tmp_path / "one.jsonl")] == [runs[3].id, runs[4].id]


def test_best_newest_compares_moments_not_their_spelling(ws: Workspace, tmp_path: Path) -> None:
    """Two runs tied on score, one stamped in another time zone: the later moment is the newer."""
    from datetime import timedelta, timezone

    earlier = graded(ws, "sum", 1.0)  # 12:00 UTC
    later = graded(ws, "sum", 1.0).model_copy(
        update={
            "timings": Timings(
                started_at=(START + timedelta(hours=1)).astimezone(timezone(timedelta(hours=-5)))
            )
        }
    )  # 08:00-05:00 is 13:00 UTC
    ws.store.put_many([earlier, later])
    export(ws, "calc", out=tmp_path / "out.jsonl", best=1)
    assert [r["metadata"]["run_id"] for r in read_rows(tmp_path / "out.jsonl")] == [later.id]


def test_cases_file_keeps_only_those_cases(ws: Workspace, tmp_path: Path) -> None:
    edited = graded(ws, "sum", 1.0).model_copy(update={"input": "add 2 and 3 (as first written)"})
    ws.store.put_many([graded(ws, "sum", 1.0), graded(ws, "half", 1.0), graded(ws, "held", 1.0), edited])
    cases = [Case.model_validate(c) for c in CASES[:1]]
    report = export(ws, "calc", out=tmp_path / "out.jsonl", cases=cases)
    rows = read_rows(tmp_path / "out.jsonl")
    assert [(r["metadata"]["case_id"], r["messages"][1]["content"]) for r in rows] == [("sum", "add 2 and 3")]
    assert ("runs of the cases given", 1) in [(s.keeps, s.left) for s in report.funnel]


async def test_since_a_suite_and_since_a_time(ws: Workspace, tmp_path: Path) -> None:
    first = await suite(ws)
    second = await suite(ws)
    ids = {}
    for since in (first, second):
        export(ws, "calc", out=tmp_path / "out.jsonl", since=since)
        ids[since] = {r["metadata"]["run_id"] for r in read_rows(tmp_path / "out.jsonl")}
    assert len(ids[first]) == len(ids[second]) == 2 and not ids[first] & ids[second]
    suite_of = {run.id: run.suite_id for run in ws.store.iter_runs("calc")}
    assert {suite_of[i] for i in ids[first]} == {first}

    old, new = graded(ws, "sum", 1.0, minutes=0), graded(ws, "sum", 1.0, minutes=90)
    ws.store.put_many([old, new])
    export(ws, "calc", out=tmp_path / "t.jsonl", since="2026-11-01T13:00:00+00:00", cases=None)
    got = {r["metadata"]["run_id"] for r in read_rows(tmp_path / "t.jsonl")}
    assert new.id in got and old.id not in got
    with pytest.raises(BadInputError, match="runs since 2027-01-01"):
        export(ws, "calc", out=tmp_path / "none.jsonl", since="2027-01-01")


@pytest.fixture
def wordmath(tmp_path: Path) -> Workspace:
    root = tmp_path / "wm"
    shutil.copytree(REPO / "machines" / "wordmath", root / "machines" / "wordmath")
    script = root / "machines" / "wordmath" / "script.json"
    return open_workspace(root, harness="scripted", script=script, budget="none")


async def test_from_exports_the_parents_runs_through_the_childs_transform(
    wordmath: Workspace, tmp_path: Path
) -> None:
    ws = wordmath
    parent, child = ws.load("wordmath"), ws.load("wordmath/fullwidth")
    assert child.transform_reasoning is not None
    await run_suite(ws, parent, ws.cases("wordmath"))
    report = export(ws, "wordmath/fullwidth", out=tmp_path / "fw.jsonl", source="wordmath")
    assert report.source == "wordmath" and report.runs == 6  # the script's six right answers
    rows = read_rows(tmp_path / "fw.jsonl")
    runs = {run.id: run for run in ws.store.iter_runs("wordmath")}
    assert {r["metadata"]["case_id"] for r in rows} == {
        "muffins",
        "marbles",
        "train",
        "tank",
        "widgets",
        "diver",
    }
    for row in rows:
        run = runs[row["metadata"]["run_id"]]
        system, user, reply = row["messages"]
        assert system == {"role": "system", "content": child.instructions}
        assert system["content"] != run.instructions
        assert user["content"] == run.input
        reasoning = reply["reasoning_content"]
        assert reasoning == child.transform_reasoning(run.trajectory[-1].reasoning or "")
        assert not any(c.isascii() and c.isalnum() for c in reasoning)
        assert reply["content"] == run.output  # only the reasoning is rewritten
        assert row["metadata"]["machine"] == "wordmath" and row["metadata"]["as"] == "wordmath/fullwidth"
    # the parent's own export keeps its reasoning and its instructions
    export(ws, "wordmath", out=tmp_path / "wm.jsonl")
    own = read_rows(tmp_path / "wm.jsonl")[0]
    assert own["messages"][0]["content"] == parent.instructions
    assert any(c.isascii() and c.isdigit() for c in own["messages"][-1]["reasoning_content"])


async def test_per_turn_writes_one_row_per_target_the_turns_before_it_context(
    ws: Workspace, tmp_path: Path
) -> None:
    await suite(ws)
    export(ws, "calc", out=tmp_path / "whole.jsonl", cases=[Case.model_validate(CASES[1])])
    report = export(
        ws, "calc", out=tmp_path / "turns.jsonl", per_turn=True, cases=[Case.model_validate(CASES[1])]
    )
    [whole] = read_rows(tmp_path / "whole.jsonl")
    turns = read_rows(tmp_path / "turns.jsonl")
    # three assistant steps, the first a divide by zero: context, never a row's target
    assert [m.get("weight") for m in whole["messages"] if m["role"] == "assistant"] == [0, None, None]
    assert (report.runs, report.rows, report.per_turn) == (1, 2, True)
    assert [t["metadata"]["turn"] for t in turns] == [1, 2]
    assert [len(t["messages"]) for t in turns] == [5, 7]
    for turn in turns:
        *before, last = turn["messages"]
        assert last == whole["messages"][len(before)] and "weight" not in last
        assert [m for m in before if m["role"] == "assistant" and m.get("weight") != 0] == []
        plain = [{k: v for k, v in m.items() if k != "weight"} for m in turn["messages"]]
        assert plain == [
            {k: v for k, v in m.items() if k != "weight"} for m in whole["messages"][: len(plain)]
        ]
        assert turn["tools"] == whole["tools"]


CHILD_PY = """\
from machine import check, define_child, define_evaluator, define_rubric

from ..machine import machine as parent

rubric = define_rubric({"terse": "The reply is one word."})

machine = define_child(
    parent,
    name="calc/terse",
    intent="Sums, answered in one word.",
    instructions="One word only.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"terse": check("one_word", lambda run: " " not in run.output)}),
)
"""


def test_tree_exports_the_family(ws: Workspace, tmp_path: Path) -> None:
    folder = ws.machines_dir / "calc" / "terse"
    folder.mkdir()
    (folder / "machine.py").write_text(CHILD_PY, encoding="utf-8")
    ws.loader.unload()
    parent, child = graded(ws, "sum", 1.0), graded(ws, "sum", 1.0, machine="calc/terse")
    # graded under the parent's rubric: not the child's current one
    stale = graded(ws, "half", 1.0, machine="calc/terse", fingerprint=ws.load("calc").rubric.fingerprint)
    ws.store.put_many([parent, child, stale])
    assert export(ws, "calc", out=tmp_path / "one.jsonl").runs == 1
    report = export(ws, "calc", out=tmp_path / "tree.jsonl", tree=True)
    rows = read_rows(tmp_path / "tree.jsonl")
    assert {(r["metadata"]["machine"], r["metadata"]["run_id"]) for r in rows} == {
        ("calc", parent.id),
        ("calc/terse", child.id),
    }
    assert report.stored == 3
    assert [(s.keeps, s.left) for s in report.funnel[:3]] == [
        ("runs that finished", 3),
        ("runs scoring at least 1", 3),
        ("runs graded under the current rubric", 2),
    ]
    with pytest.raises(BadInputError, match=r"the family \(tree\) or another machine's runs \(source\)"):
        export(ws, "calc", out=tmp_path / "x.jsonl", tree=True, source="calc/terse")


def test_the_file_is_readable_only_by_its_owner(ws: Workspace, tmp_path: Path) -> None:
    ws.store.put(graded(ws, "sum", 1.0))
    out = tmp_path / "out.jsonl"
    out.write_text("an older file\n", encoding="utf-8")
    out.chmod(0o666)
    old_umask = os.umask(0)
    try:
        export(ws, "calc", out=out)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert len(read_rows(out)) == 1
    fresh = tmp_path / "new" / "deeper" / "out.jsonl"
    export(ws, "calc", out=fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_an_empty_selection_names_the_filter_and_leaves_no_file(ws: Workspace, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(BadInputError, match="has no stored runs") as caught:
        export(ws, "calc", out=out)
    assert caught.value.fixes and caught.value.fixes[0].operation == "suite"
    ws.store.put_many([graded(ws, "sum", 0.5), graded(ws, "half", 0.25)])
    with pytest.raises(BadInputError) as caught:
        export(ws, "calc", out=out)
    message = str(caught.value)
    assert "only runs scoring at least 1 are kept (2 were before that filter)" in message
    assert "lower the score asked for; pass min_score=0.5 to keep runs that score less" in message
    with pytest.raises(BadInputError, match="only runs marked good are kept"):
        export(ws, "calc", out=out, min_score=0.0, tags="good")
    with pytest.raises(BadInputError, match="only runs of the cases given are kept"):
        export(ws, "calc", out=out, min_score=0.0, cases=[Case(id="other", input="something else")])
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".out.jsonl")]


def test_an_empty_selection_leaves_an_earlier_file_as_it_was(ws: Workspace, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    ws.store.put(graded(ws, "sum", 0.5))
    with pytest.raises(BadInputError):
        export(ws, "calc", out=out)
    assert out.read_text(encoding="utf-8") == "earlier\n"


def test_an_unwritable_out_is_an_error_in_words(ws: Workspace, tmp_path: Path) -> None:
    ws.store.put(graded(ws, "sum", 1.0))
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    with pytest.raises(BadInputError, match=r"cannot write the export to .*a-file/out\.jsonl"):
        export(ws, "calc", out=tmp_path / "a-file" / "out.jsonl")


async def test_only_runs_graded_under_the_current_rubric_count(ws: Workspace, tmp_path: Path) -> None:
    await suite(ws)
    assert export(ws, "calc", out=tmp_path / "out.jsonl").runs == 2
    rubric = ws.machines_dir / "calc" / "rubric.py"
    rubric.write_text(rubric.read_text(encoding="utf-8").replace("the case's answer", "the answer, exactly"))
    changed = ws
    old = ws.load("calc").rubric.fingerprint
    assert ws.reload("calc").rubric.fingerprint != old  # the machine as its files now are
    with pytest.raises(BadInputError, match="only runs graded under the current rubric are kept") as caught:
        export(changed, "calc", out=tmp_path / "out2.jsonl")
    assert "grade the stored runs again under it, or run a new suite" in str(caught.value)
    regraded = await changed.grade(next(r for r in changed.store.iter_runs("calc") if r.case_id == "sum"))
    assert regraded.scorecard is not None
    assert regraded.scorecard.rubric_fingerprint == changed.load("calc").rubric.fingerprint
    report = export(changed, "calc", out=tmp_path / "out2.jsonl")
    assert [r["metadata"]["run_id"] for r in read_rows(tmp_path / "out2.jsonl")] == [regraded.id]
    assert [(s.keeps, s.left) for s in report.funnel] == [
        ("runs that finished", 3),
        ("runs scoring at least 1", 2),
        ("runs graded under the current rubric", 1),
        ("runs of cases not held out", 1),
    ]


def test_held_out_runs_stay_out_unless_asked_for_by_name(ws: Workspace, tmp_path: Path) -> None:
    """The break: export included held-out runs by default, so training data could hold the very cases
    the gate measures. They are left out as train leaves them out: by id, and by input written otherwise."""
    kept = graded(ws, "sum", 1.0)
    held = graded(ws, "held", 1.0)
    alike = graded(ws, "held", 1.0).model_copy(update={"case_id": "copy", "input": "Add 10 and 20!"})
    ws.store.put_many([kept, held, alike])
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    assert [r["metadata"]["run_id"] for r in read_rows(tmp_path / "out.jsonl")] == [kept.id]
    assert (report.held_out, report.include_holdout) == (1, False)
    assert report.funnel[-1].model_dump() == {"keeps": "runs of cases not held out", "left": 1}
    everything = export(ws, "calc", out=tmp_path / "all.jsonl", include_holdout=True)
    exported = {r["metadata"]["run_id"] for r in read_rows(tmp_path / "all.jsonl")}
    assert exported == {kept.id, held.id, alike.id}
    assert (everything.held_out, everything.include_holdout) == (0, True)


def test_failed_runs_stay_out(ws: Workspace, tmp_path: Path) -> None:
    failed = graded(ws, "sum", 1.0).model_copy(update={"status": "error", "error": "the model went away"})
    ws.store.put_many([failed, graded(ws, "half", 1.0)])
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    assert report.runs == 1 and report.funnel[0].left == 1


def test_a_bad_best_is_refused(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="best must be a whole number of at least 1, got 0"):
        export(ws, "calc", out=tmp_path / "out.jsonl", best=0)


async def test_each_line_is_the_row_as_json(ws: Workspace, tmp_path: Path) -> None:
    """The file holds exactly ``rows_of`` of each run, one JSON text a line, unescaped unicode kept."""
    await suite(ws)
    ws.store.put(graded(ws, "sum", 1.0, instructions="Réponds en français ✓"))
    export(ws, "calc", out=tmp_path / "out.jsonl", per_turn=True)
    spec = ws.load("calc")
    runs = {run.id: run for run in ws.store.iter_runs("calc")}
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 + 2 + 2  # half's divide by zero is no row's target
    for line in lines:
        row = json.loads(line)
        turn = row["metadata"]["turn"]
        expected = rows_of(runs[row["metadata"]["run_id"]], spec, per_turn=True)[turn - 1]
        assert line == json.dumps(expected, ensure_ascii=False)
    assert any("Réponds en français ✓" in line for line in lines)
