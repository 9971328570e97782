"""The training record under ``.machine/training/<id>/``: what went in (pinned), what came out, private
files, a new folder for every training; and resuming a stopped training, only as the same training."""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
from pathlib import Path

import pytest
from helpers.training import BASE, TRAIN_CASES, Counting, Tutored, make_caps

from machine import BadInputError, BudgetExceeded, NotFoundError, Workspace, open_workspace
from machine.learn import TrainingRecord, TrainOptions, train
from machine.runs import library_version
from machine.spec import Case
from machine.training import Checkpoint, StepMetrics, TrainExample
from machine.versions import versions

SETTINGS = TrainOptions(batch_size=2, epochs=1, force=True)
"""One pass of 2 a step: a short plan (3 steps over 6 sequences), forced, so the steps are few to follow."""
FILES = ["checkpoints.jsonl", "metrics.jsonl", "record.json", "train.jsonl", "train.log"]


def folder_of(ws: Workspace, record_id: str) -> Path:
    return ws.data_dir / "training" / record_id


def record_at(folder: Path) -> TrainingRecord:
    return TrainingRecord.model_validate_json((folder / "record.json").read_bytes())


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def git_repo(root: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
        )
        return done.stdout.strip()

    git("init", "-q")
    git("add", "machines")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "machines")
    return git("rev-parse", "HEAD")


async def test_the_record_pins_what_went_in_and_keeps_what_came_out(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    versions(ws, "caps")  # versions.json is committed with the machine, as a project keeps it
    head = git_repo(tmp_path)
    trainer = Counting()
    candidate = await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer)
    assert candidate.report.training is not None
    folder = folder_of(ws, candidate.report.training.record)
    assert sorted(p.name for p in folder.iterdir()) == FILES
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE((folder / f).stat().st_mode) == 0o600 for f in FILES)
    record = record_at(folder)
    [examples] = trainer.prepared
    assert (record.machine, record.base_model, record.trainer, record.renderer) == (
        "caps",
        BASE,
        "counting",
        "characters/4",
    )
    assert (record.settings.base_model, record.settings.batch_size, record.settings.epochs) == (BASE, 2, 1)
    assert record.plan is not None and (record.plan.steps, record.plan.enough) == (3, False)  # it was forced
    chose = record.selection
    assert (chose.samples, chose.min_score, chose.best_of, chose.any_model, chose.own_model) == (
        2,
        1.0,
        2,
        False,
        BASE,
    )
    assert chose.held_out == ["h-dan", "h-dax", "h-dee", "h-dew", "h-dot", "h-dub"]
    assert chose.run_ids == [e.run_id for e in examples] and len(chose.run_ids) == 6
    [pin] = record.datasets
    written = (folder / "train.jsonl").read_bytes()
    assert (pin.path, pin.rows, pin.sha256) == ("train.jsonl", 6, hashlib.sha256(written).hexdigest())
    assert [TrainExample.model_validate_json(line) for line in written.splitlines()] == examples
    assert (record.library_version, record.revision) == (library_version(), head)
    assert (record.status, record.steps, record.sampled, record.candidate) == ("trained", 3, 6, "v2")
    steps = [StepMetrics.model_validate(m) for m in lines(folder / "metrics.jsonl")]
    assert [m.step for m in steps] == [1, 2, 3] and [m.sequences for m in steps] == [2, 2, 2]
    assert steps[0].loss is not None and steps[-1].loss is not None and steps[-1].loss < steps[0].loss
    [checkpoint] = [Checkpoint.model_validate(c) for c in lines(folder / "checkpoints.jsonl")]
    assert checkpoint == record.checkpoint and checkpoint.model == candidate.version.model
    log = (folder / "train.log").read_text(encoding="utf-8")
    assert "counting on thinkingmachines/Inkling: 6 sequences" in log and checkpoint.model in log


async def test_every_training_gets_a_new_folder_and_the_pin_follows_the_runs(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    first = await train(ws, "caps", samples=1, trials=1, best_of=5, options=SETTINGS, trainer=Counting())
    assert first.report.training is not None
    one = folder_of(ws, first.report.training.record)
    kept = snapshot(one)
    second = await train(ws, "caps", trials=1, best_of=5, options=SETTINGS, trainer=Counting())
    assert second.report.training is not None
    two = folder_of(ws, second.report.training.record)
    assert two != one and snapshot(one) == kept  # the first record is never written over
    assert record_at(two).datasets[0].sha256 == record_at(one).datasets[0].sha256  # the same runs
    case = Case.model_validate(TRAIN_CASES[0])
    await ws.run(ws.load("caps"), case.input, case=case, trial=7, grade=True)  # a new good run
    third = await train(ws, "caps", trials=1, best_of=5, options=SETTINGS, trainer=Counting())
    assert third.report.training is not None
    three = record_at(folder_of(ws, third.report.training.record))
    assert three.datasets[0].sha256 != record_at(one).datasets[0].sha256
    assert len(three.selection.run_ids) == 4 and three.datasets[0].rows == 4


def stop_after(ws: Workspace, step: int) -> object:
    """An ``on_step`` that spends the whole budget once ``step`` is done, so the next step is refused."""

    def seen(metrics: StepMetrics) -> None:
        if metrics.step == step:
            ws.budget.usd = ws.budget.spent

    return seen


async def stopped_training(ws: Workspace, trainer: Counting) -> Path:
    """A training the budget stops after its first step; its record's folder."""
    with pytest.raises(BudgetExceeded) as stopped:
        await train(
            ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer, on_step=stop_after(ws, 1)
        )  # type: ignore[arg-type]
    [folder] = (ws.data_dir / "training").iterdir()
    message = str(stopped.value)
    assert f"training {folder.name} stopped after step 1" in message and str(folder) in message
    assert f"pass resume={folder.name!r}" in message
    return folder


async def test_a_stopped_training_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer = Counting()
    folder = await stopped_training(ws, trainer)
    record = record_at(folder)
    assert (record.status, record.steps) == ("stopped", 1)
    assert record.error is not None and "spent" in record.error
    [saved] = [Checkpoint.model_validate(c) for c in lines(folder / "checkpoints.jsonl")]
    assert (saved.step, record.checkpoint) == (1, saved)
    log = (folder / "train.log").read_text(encoding="utf-8")
    assert f"resume it: train caps with resume {folder.name}" in log
    assert json.loads((ws.machines_dir / "caps" / "versions.json").read_text())["versions"][1:] == []
    examples = (folder / "train.jsonl").read_bytes()
    runs = len(list(ws.store.iter_runs("caps")))

    with pytest.raises(BudgetExceeded, match=f"training {folder.name} stopped after step 1 "):
        await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer, resume=folder.name)
    assert [c["step"] for c in lines(folder / "checkpoints.jsonl")] == [1]  # still the one saved state

    ws.budget.usd = None
    candidate = await train(
        ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer, resume=folder.name
    )
    assert trainer.resumed == [None, saved, saved] and trainer.steps == [1, 2, 3]
    assert [m["step"] for m in lines(folder / "metrics.jsonl")] == [1, 2, 3]
    assert [c["step"] for c in lines(folder / "checkpoints.jsonl")] == [1, 3]
    assert (folder / "train.jsonl").read_bytes() == examples
    assert [p.name for p in (ws.data_dir / "training").iterdir()] == [folder.name]  # the same record
    assert len([r for r in ws.store.iter_runs("caps") if r.case_id in {"ann", "bob", "cat"}]) == 6
    # only the candidate's runs: the live version's 6 were measured when the gate was fixed, before step 1
    assert len(list(ws.store.iter_runs("caps"))) == runs + 6
    assert candidate.passed and candidate.report.training is not None
    t = candidate.report.training
    assert (t.record, t.steps, t.sampled, t.first_loss) == (folder.name, 3, 6, 2.0)
    assert record_at(folder).status == "trained"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"epochs": 2}, "settings.epochs was 1, now 2"),
        ({"lr": 0.001}, "settings.learning_rate was null, now 0.001"),
    ],
)
async def test_resume_is_refused_when_how_it_trains_changed(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer = Counting()
    folder = await stopped_training(ws, trainer)
    kept = snapshot(folder)
    ws.budget.usd = None
    other = SETTINGS.model_copy(update=change)
    with pytest.raises(BadInputError, match=f"training {folder.name} cannot be resumed: .*{named}"):
        await train(ws, "caps", samples=2, trials=1, options=other, trainer=trainer, resume=folder.name)
    assert snapshot(folder) == kept and trainer.steps == [1]


async def test_resume_is_refused_when_the_selection_changed_and_nothing_is_written_over(
    tmp_path: Path,
) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored(), budget=5.0)
    trainer = Counting()
    # the budget is spent before the first step (as the gate is fixed): the record has no checkpoint yet
    cap = {"at": "fixing the gate"}

    def phase(line: str) -> None:
        if line.startswith(cap["at"]):
            ws.budget.usd = ws.budget.spent

    with pytest.raises(BudgetExceeded, match="stopped after step 0"):
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=trainer, on_phase=phase)
    [folder] = (ws.data_dir / "training").iterdir()
    assert not (folder / "checkpoints.jsonl").exists() and record_at(folder).status == "stopped"
    kept = snapshot(folder)
    ws.budget.usd = None
    case = Case.model_validate(TRAIN_CASES[0])
    await ws.run(ws.load("caps"), case.input, case=case, trial=5, grade=True)  # a new good run
    with pytest.raises(BadInputError, match=r"cannot be resumed: .*selection\.run_ids was") as refused:
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=trainer, resume=folder.name)
    assert "datasets was" in str(refused.value)
    assert snapshot(folder) == kept
    with pytest.raises(BadInputError, match=r"selection\.samples was 1, now 3"):
        await train(
            ws, "caps", samples=3, trials=1, best_of=1, options=SETTINGS, trainer=trainer, resume=folder.name
        )


async def test_an_unknown_record_says_which_records_exist_before_anything_runs(tmp_path: Path) -> None:
    make_caps(tmp_path)
    harness = Tutored()
    ws = open_workspace(tmp_path, harness=harness)
    with pytest.raises(NotFoundError, match=r"there is no training record 'nope' .*the records are: none"):
        await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=Counting(), resume="nope")
    assert harness.calls == {}
    done = await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting())
    assert done.report.training is not None
    harness.calls.clear()
    with pytest.raises(NotFoundError, match=f"the records are: {done.report.training.record}$"):
        await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=Counting(), resume="nope")
    assert harness.calls == {}


async def test_a_finished_training_is_not_resumed_but_named_with_its_checkpoint(tmp_path: Path) -> None:
    make_caps(tmp_path)
    harness = Tutored()
    ws = open_workspace(tmp_path, harness=harness)
    done = await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting())
    assert done.report.training is not None
    record_id = done.report.training.record
    harness.calls.clear()
    with pytest.raises(BadInputError, match=f"training {record_id} finished already, with checkpoint "):
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting(), resume=record_id)
    assert harness.calls == {}


async def test_a_training_stopped_from_outside_is_recorded_as_far_as_it_got_and_resumes(
    tmp_path: Path,
) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness=Tutored())
    trainer = Counting(report_saves_every=1)

    def ctrl_c_at_two(metrics: StepMetrics) -> None:
        if metrics.step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await train(ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer, on_step=ctrl_c_at_two)
    [folder] = (ws.data_dir / "training").iterdir()
    record = record_at(folder)
    assert (record.status, record.steps, record.error) == ("stopped", 2, "stopped from outside after step 2")
    [saved] = [Checkpoint.model_validate(c) for c in lines(folder / "checkpoints.jsonl")]
    assert (
        saved.step == 1 and record.checkpoint == saved
    )  # the state saved before the stop, handed on at once
    log = (folder / "train.log").read_text(encoding="utf-8")
    assert f"resume it: train caps with resume {folder.name}" in log

    candidate = await train(
        ws, "caps", samples=2, trials=1, options=SETTINGS, trainer=trainer, resume=folder.name
    )
    assert trainer.resumed == [None, saved] and trainer.steps == [1, 2, 2, 3]
    assert candidate.report.training is not None and record_at(folder).status == "trained"
