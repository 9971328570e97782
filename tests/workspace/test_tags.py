"""A person's marks on stored runs, in a real store: one verdict a run (a later good or bad replaces the
earlier), corrections that add up, the newest marked and observed runs found along the time index
(past a page), and the per-workspace switch for observing outside hosts' runs (private, off by default)."""

from __future__ import annotations

import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.learn_runs import START, calc_workspace, graded

from machine import Workspace
from machine.errors import BadInputError, NotFoundError
from machine.ops import fork, observed, tagged
from machine.runs import Tag, retagged
from machine.workspace import observed_runs, observing, set_observing, tagged_runs


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return calc_workspace(tmp_path)


def test_a_verdict_replaces_the_earlier_one_and_corrections_add_up() -> None:
    good, bad = Tag(kind="good", answer="5"), Tag(kind="bad", note="wrong")
    fix, again = Tag(kind="correction", note="shorter"), Tag(kind="correction", note="kinder")
    assert retagged([good, fix], bad) == [fix, bad]
    assert retagged([bad], good) == [good]
    traced = Tag(kind="good", trace=True)
    assert retagged([good], traced) == [traced]  # a second good mark replaces the first
    assert retagged([fix, bad], again) == [fix, bad, again]


def test_tag_stores_the_mark_and_refuses_options_a_mark_cannot_take(ws: Workspace) -> None:
    run = graded(ws, "sum", 1.0)
    ws.store.put(run)
    marked = ws.tag(run, "good", "right", trace=True, reasoning=True)
    assert ws.store.get(run.id).tags == marked.tags
    [tag] = marked.tags
    assert (tag.kind, tag.note, tag.trace, tag.reasoning, tag.answer) == ("good", "right", True, True, None)
    marked = ws.tag(marked, "bad", "no")
    assert [t.kind for t in ws.store.get(run.id).tags] == ["bad"]
    with pytest.raises(BadInputError, match="go with a good mark, not a bad one"):
        ws.tag(marked, "bad", answer="5")
    with pytest.raises(BadInputError, match="good, bad or correction, not 'great'"):
        ws.tag(marked, "great")


def test_the_newest_marked_and_observed_runs_past_a_page(ws: Workspace) -> None:
    runs = [graded(ws, "sum", 1.0, timings={"started_at": START + timedelta(seconds=i)}) for i in range(700)]
    runs[3] = runs[3].model_copy(update={"tags": [Tag(kind="bad")]})
    runs[650] = runs[650].model_copy(update={"tags": [Tag(kind="good")], "observed": True})
    runs[5] = runs[5].model_copy(update={"observed": True})
    runs[6] = runs[6].model_copy(update={"input": 'says "observed":true and "kind":"x"'})  # text alone
    ws.store.put_many(runs)
    assert [r.id for r in tagged_runs(ws.store)] == [runs[650].id, runs[3].id]
    assert [r.id for r in tagged_runs(ws.store, "calc", limit=1)] == [runs[650].id]
    assert [r.id for r in observed_runs(ws.store, "calc")] == [runs[650].id, runs[5].id]
    assert observed_runs(ws.store, "other") == []
    [row] = tagged(ws, "calc", 1)
    shown = (row.id, row.tags[0].kind, row.observed, row.input_preview)
    assert shown == (runs[650].id, "good", True, "add 2 and 3")
    with pytest.raises(NotFoundError, match=r"known machines"):
        observed(ws, "nope")


def test_observing_is_off_until_turned_on_and_its_file_is_private(ws: Workspace) -> None:
    assert observing(ws.data_dir) is False
    set_observing(ws.data_dir, True)
    assert observing(ws.data_dir) is True
    assert stat.S_IMODE(os.stat(ws.data_dir / "observe.json").st_mode) == 0o600
    set_observing(ws.data_dir, False)
    assert observing(ws.data_dir) is False
    (ws.data_dir / "observe.json").write_text("not json")
    assert observing(ws.data_dir) is False  # a damaged switch is off, never on


async def test_fork_takes_the_newest_observed_run_and_refuses_without_one(ws: Workspace) -> None:
    with pytest.raises(NotFoundError, match="no observed run to fork") as refused:
        await fork(ws, "add with care")
    assert str(refused.value).endswith(
        "; `machine.ops.fork(workspace, note, run_id=ID)` corrects a stored run"
    )
    older = graded(ws, "sum", 1.0, observed=True, output="5")
    newer = graded(ws, "miss", 1.0, minutes=1, observed=True, output="7")
    ws.store.put_many([older, newer])
    made = await fork(ws, "add with care")
    assert made.forked_from == newer.id and made.input.startswith("add 1 and 3, carelessly\n\n")
    assert made.observed is False  # the person's correction is no outside host's run
    with pytest.raises(BadInputError, match="needs a note"):
        await fork(ws, "  ", older.id)
