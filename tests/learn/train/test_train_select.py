"""What ``train`` learns from: never a held-out case (by id or by input), only the live model's own runs
unless ``any_model`` (a replay is never the model's own), each case's best ``best_of`` scoring at least
``min_score``, graded under the current rubric; ``samples`` new runs a case first and pending runs graded."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.training import BASE, HELD_OUT, TRAIN_CASES, Counting, Tutored, make_caps

from machine import BadInputError, BudgetExceeded, Workspace, open_workspace
from machine.clients.scripted import ScriptedHarness
from machine.learn import ALL_SOURCES, TrainingRecord, TrainOptions, train
from machine.runs import Run
from machine.spec import Case
from machine.training import StepMetrics, TrainExample
from machine.versions import update

SETTINGS = TrainOptions(batch_size=4, epochs=1, force=True)  # the selection is under test, not the plan


def record_of(ws: Workspace, record_id: str) -> TrainingRecord:
    path = ws.data_dir / "training" / record_id / "record.json"
    return TrainingRecord.model_validate_json(path.read_bytes())


def learned(trainer: Counting) -> list[TrainExample]:
    [examples] = trainer.prepared
    return examples


def runs_of(ws: Workspace, examples: list[TrainExample]) -> list[Run]:
    return [ws.store.get(e.run_id) for e in examples]


async def test_no_held_out_case_is_learned_even_under_another_case_id(tmp_path: Path) -> None:
    # "ann" is held out under the id h-ann, and is also a training case: its runs are never learned
    holdout = [*HELD_OUT, {"id": "h-ann", "input": "ann"}]
    make_caps(tmp_path, holdout=holdout)
    ws = open_workspace(tmp_path, harness=Tutored())
    first = Counting("good")
    candidate = await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=first)
    assert {e.case_id for e in learned(first)} == {"bob", "cat"}
    # the comparison stored the live model's runs of the held-out cases (h-ann's scored 1): still kept out
    stored = Counter((r.case_id, r.score) for r in ws.store.iter_runs("caps") if r.model == BASE)
    assert stored[("h-ann", 1.0)] == 1
    second = Counting("good")
    await train(ws, "caps", trials=1, options=SETTINGS, trainer=second)
    held_inputs = {c["input"] for c in holdout}
    for run in runs_of(ws, learned(second)):
        assert run.case_id in {"bob", "cat"} and run.input not in held_inputs
    record = record_of(ws, candidate.report.training.record if candidate.report.training else "")
    assert record.selection.held_out == sorted(c["id"] for c in holdout)
    assert all("ann" not in json.dumps(e.messages) for e in learned(second))


async def test_a_held_out_input_written_otherwise_is_not_learned(tmp_path: Path) -> None:
    """The break: a good run of "what colour is the sky? " was trained on while the held-out case reads
    "What colour is the sky?"."""
    sky = {"id": "sky", "input": "what colour is the sky? "}
    make_caps(
        tmp_path,
        cases=[*TRAIN_CASES, sky],
        holdout=[*HELD_OUT, {"id": "h-sky", "input": "What colour is the sky?"}],
    )
    ws = open_workspace(tmp_path, harness=Tutored())
    trainer = Counting("good")
    await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer)
    assert any(r.case_id == "sky" and r.score == 1.0 for r in ws.store.iter_runs("caps"))  # a good run of it
    assert {e.case_id for e in learned(trainer)} == {"ann", "bob", "cat"}
    assert all("sky" not in json.dumps(e.messages) for e in learned(trainer))


async def test_only_the_live_models_own_runs_unless_any_model(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    spec = ws.load("caps")
    cases = [Case.model_validate(c) for c in TRAIN_CASES]
    for case in cases:
        await ws.run(spec, case.input, case=case, trial=0, model="teacher", grade=True)
    own = Counting("good")
    with pytest.raises(BadInputError, match=f"runs {BASE} produced itself .*any_model=True"):
        await train(ws, "caps", trials=1, options=SETTINGS, trainer=own)
    assert own.prepared == [] and not (folder.parent.parent / ".machine" / "training").exists()
    await ws.run(spec, "bob", case=cases[1], trial=1, grade=True)  # one run of the live model itself
    await train(ws, "caps", trials=1, options=SETTINGS, trainer=own)
    assert [(r.model, r.case_id) for r in runs_of(ws, learned(own))] == [(BASE, "bob")]
    distilled = Counting("good")
    # other models' runs too, from two sources: refused, naming each, until one is named or all are taken
    with pytest.raises(BadInputError) as mixed:
        await train(ws, "caps", trials=1, any_model=True, options=SETTINGS, trainer=distilled)
    assert (
        "come from 2 sources (3 of teacher on tutored, 1 of " + BASE + " on tutored)" in mixed.value.message
    )
    fixes = [(f.argument, f.value) for f in mixed.value.fixes]
    assert fixes == [("from_model", "teacher"), ("from_suite", "ID"), ("all_sources", None)]
    assert distilled.prepared == []
    taught = await train(ws, "caps", trials=1, from_model="teacher", options=SETTINGS, trainer=distilled)
    assert Counter(r.model for r in runs_of(ws, learned(distilled))) == {"teacher": 3}
    assert taught.report.training is not None
    chose = record_of(ws, taught.report.training.record).selection
    assert (chose.from_model, chose.sources) == ("teacher", {"teacher on tutored": 3})
    everything = Counting("good")
    candidate = await train(
        ws, "caps", trials=1, any_model=True, all_sources=True, options=SETTINGS, trainer=everything
    )
    assert Counter(r.model for r in runs_of(ws, learned(everything))) == {"teacher": 3, BASE: 1}
    assert candidate.report.training is not None
    record = record_of(ws, candidate.report.training.record)
    assert (record.selection.any_model, record.selection.own_model) == (True, None)
    assert record.selection.sources == {"teacher on tutored": 3, f"{BASE} on tutored": 1}


async def test_a_chooser_asked_for_the_source_picks_one_all_or_none(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    spec = ws.load("caps")
    cases = [Case.model_validate(c) for c in TRAIN_CASES]
    for case in cases:
        await ws.run(spec, case.input, case=case, trial=0, model="teacher", grade=True)
    await ws.run(spec, "bob", case=cases[1], trial=1, grade=True)
    both = {"teacher on tutored": 3, f"{BASE} on tutored": 1}
    asked: list[dict[str, int]] = []

    def choosing(answer: str | None) -> Callable[[dict[str, int]], str | None]:
        def choose(found: dict[str, int]) -> str | None:
            asked.append(found)
            return answer

        return choose

    one = Counting("good")
    picked = choosing("teacher on tutored")
    taught = await train(
        ws, "caps", trials=1, any_model=True, choose_source=picked, options=SETTINGS, trainer=one
    )
    assert asked == [both] and Counter(r.model for r in runs_of(ws, learned(one))) == {"teacher": 3}
    assert taught.report.training is not None
    assert record_of(ws, taught.report.training.record).selection.from_model == "teacher"
    every = Counting("good")
    await train(
        ws,
        "caps",
        trials=1,
        any_model=True,
        choose_source=choosing(ALL_SOURCES),
        options=SETTINGS,
        trainer=every,
    )
    assert Counter(r.model for r in runs_of(ws, learned(every))) == {"teacher": 3, BASE: 1}
    for answer in (None, "nobody on tutored"):  # no answer, or one that is not a source: refused as before
        with pytest.raises(BadInputError, match="come from 2 sources"):
            await train(
                ws, "caps", trials=1, any_model=True, choose_source=choosing(answer), options=SETTINGS,
                trainer=Counting("good"),
            )  # fmt: skip
    assert asked == [both] * 4


async def test_a_replayed_run_is_never_the_models_own(tmp_path: Path) -> None:
    make_caps(tmp_path)
    script = tmp_path / "script.json"
    rules = [{"match": c["input"], "turns": [{"text": c["input"].upper()}]} for c in TRAIN_CASES]
    script.write_text(json.dumps({"rules": [*rules, {"match": ".", "turns": [{"text": "?"}]}]}))
    ws = open_workspace(tmp_path, harness=ScriptedHarness(script))
    with pytest.raises(BadInputError) as refused:
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting())
    message = str(refused.value)
    assert f"only runs {BASE} produced itself are kept (3 were before that filter)" in message
    stored = list(ws.store.iter_runs("caps"))
    assert len(stored) == 3 and {(r.model, r.harness, r.score) for r in stored} == {(BASE, "scripted", 1.0)}
    replays = Counting()
    await train(ws, "caps", trials=1, any_model=True, options=SETTINGS, trainer=replays)
    assert {e.case_id for e in learned(replays)} == {"ann", "bob", "cat"}


async def test_best_of_each_case_and_min_score(tmp_path: Path) -> None:
    # "dot" is hard for the live model but not held out here: its runs score 0
    cases = [*TRAIN_CASES, {"id": "dot", "input": "dot"}]
    make_caps(tmp_path, cases=cases, holdout=HELD_OUT[:2])
    ws = open_workspace(tmp_path, harness=Tutored())
    best = Counting()
    await train(ws, "caps", samples=3, trials=1, best_of=2, options=SETTINGS, trainer=best)
    assert Counter(e.case_id for e in learned(best)) == {"ann": 2, "bob": 2, "cat": 2}
    every = Counting()
    await train(ws, "caps", trials=1, best_of=5, min_score=0.0, options=SETTINGS, trainer=every)
    assert Counter(e.case_id for e in learned(every)) == {"ann": 3, "bob": 3, "cat": 3, "dot": 3}
    assert {r.score for r in runs_of(ws, learned(every)) if r.case_id == "dot"} == {0.0}


async def test_samples_runs_each_case_first_and_stores_them(tmp_path: Path) -> None:
    make_caps(tmp_path)
    harness = Tutored()
    ws = open_workspace(tmp_path, harness=harness)
    await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=Counting())
    sampled = [r for r in ws.store.iter_runs("caps") if r.case_id in {"ann", "bob", "cat"}]
    assert Counter((r.case_id, r.trial, r.version) for r in sampled) == {
        (case, trial, "v1"): 1 for case in ("ann", "bob", "cat") for trial in (0, 1)
    }
    assert all(r.scorecard is not None for r in sampled)


async def test_pending_runs_are_graded_first(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    spec = ws.load("caps")
    ungraded = [
        await ws.run(spec, c["input"], case=Case.model_validate(c), trial=0, grade=False) for c in TRAIN_CASES
    ]
    assert all(r.scorecard is None for r in ungraded)
    trainer = Counting()
    await train(ws, "caps", trials=1, options=SETTINGS, trainer=trainer)
    assert sorted(e.run_id for e in learned(trainer)) == sorted(r.id for r in ungraded)
    assert all(ws.store.get(r.id).score == 1.0 for r in ungraded)


async def test_runs_are_judged_by_the_current_rubric(tmp_path: Path) -> None:
    folder = make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting())
    # the rubric now asks for the input as it was: every stored run is graded again, and none is good
    machine_py = (folder / "machine.py").read_text(encoding="utf-8")
    (folder / "machine.py").write_text(machine_py.replace("r.input.upper()", "r.input"), encoding="utf-8")
    rubric_py = (folder / "rubric.py").read_text(encoding="utf-8")
    (folder / "rubric.py").write_text(rubric_py.replace("in capital letters", "as given"), encoding="utf-8")
    update(ws, "caps")
    trainer = Counting()
    with pytest.raises(BadInputError, match="only runs scoring at least 1 are kept"):
        await train(ws, "caps", trials=1, options=SETTINGS, trainer=trainer)
    fingerprint = ws.load("caps").rubric.fingerprint
    cards = [r.scorecard for r in ws.store.iter_runs("caps")]
    assert all(card is not None and card.rubric_fingerprint == fingerprint for card in cards)
    assert trainer.prepared == []


async def test_from_suite_learns_from_that_suites_runs_alone(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    spec = ws.load("caps")
    cases = [Case.model_validate(c) for c in TRAIN_CASES]
    for trial, suite in enumerate(("old", "chosen")):
        for case in cases:
            run = await ws.run(spec, case.input, case=case, trial=trial, model="teacher", grade=True)
            ws.store.put(run.model_copy(update={"suite_id": suite}))
    trainer = Counting("good")
    await train(ws, "caps", trials=1, from_suite="chosen", any_model=True, options=SETTINGS, trainer=trainer)
    assert {r.suite_id for r in runs_of(ws, learned(trainer))} == {"chosen"}
    with pytest.raises(BadInputError, match="no run of machine 'caps' is left once only runs since nope"):
        await train(
            ws, "caps", trials=1, from_suite="nope", any_model=True, options=SETTINGS, trainer=trainer
        )


async def test_a_resumed_training_learns_from_the_source_chosen_at_its_start(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    spec = ws.load("caps")
    cases = [Case.model_validate(c) for c in TRAIN_CASES]
    ws.budget.usd = None  # the teacher has no price
    for case in cases:
        await ws.run(spec, case.input, case=case, trial=0, model="teacher", grade=True)
    await ws.run(spec, "bob", case=cases[1], trial=1, grade=True)
    ws.budget.usd = 5.0
    asked: list[dict[str, int]] = []

    def choose(found: dict[str, int]) -> str:
        asked.append(found)
        return "teacher on tutored"

    def stop(metrics: StepMetrics) -> None:
        if metrics.step == 1:
            ws.budget.usd = ws.budget.spent

    first = Counting("good")
    every_step = SETTINGS.model_copy(update={"batch_size": 1})
    with pytest.raises(BudgetExceeded, match="stopped after step 1"):
        await train(
            ws, "caps", trials=1, any_model=True, choose_source=choose, options=every_step,
            trainer=first, on_step=stop,
        )  # fmt: skip
    [record] = (ws.data_dir / "training").iterdir()
    ws.budget.usd = None
    again = Counting("good")
    resumed = await train(
        ws, "caps", trials=1, any_model=True, options=every_step, trainer=again, resume=record.name
    )
    assert len(asked) == 1  # not asked again, and not refused for want of an answer
    assert Counter(r.model for r in runs_of(ws, learned(again))) == {"teacher": 3}
    assert resumed.report.training is not None and resumed.report.training.record == record.name
