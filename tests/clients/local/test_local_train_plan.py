"""Training a local model with no flag at all, on a tiny model made in the test: the plan reaches the steps
a model needs (the old default of one epoch of 8 gave 1 step here), is printed and recorded before the
first step, and the trainer follows it; a smoke run trains two steps through a saved state, samples the
checkpoint once and keeps nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.bye import write_bye
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine import Workspace, open_workspace  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.learn import TrainingRecord, check_training, train  # noqa: E402
from machine.ops import make_trainer  # noqa: E402
from machine.runs import Message, Tag, new_run_id  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    _local_models.forget()


async def taught(root: Path, model: Path, cases: int = 6) -> Workspace:
    """A workspace whose machine ``bye`` has a teacher's good run of each of ``cases`` cases, and local
    sampling from then on."""
    script = write_bye(root, model, cases=cases, held_out="hello 99")
    teacher = open_workspace(root, harness="scripted", script=script, budget="none")
    spec = teacher.load("bye")
    for case in teacher.cases(spec):
        assert (await teacher.run(spec, case.input, case=case, trial=0, grade=True)).score == 1.0
    return teacher.using(harness=LocalHarness(max_new_tokens=4, temperature=0.0))


async def test_a_training_with_no_flag_follows_a_plan_that_reaches_the_minimum_steps(
    tiny: Path, tmp_path: Path
) -> None:
    ws = await taught(tmp_path / "ws", tiny)
    said: list[str] = []
    candidate = await train(
        ws, "bye", trials=1, any_model=True, make_trainer=make_trainer, on_phase=said.append
    )
    summary = candidate.report.training
    assert summary is not None and summary.plan is not None
    plan = summary.plan
    # 6 sequences: batches of 2 (3 steps an epoch), so 10 epochs for 30 steps; the trainer's own rate
    assert (plan.sequences, plan.batch_size, plan.steps_per_epoch, plan.epochs) == (6, 2, 3, 10)
    assert (plan.steps, plan.min_steps, plan.enough) == (30, 30, True)
    assert plan.learning_rate == 2e-4 and plan.price_usd == 0.0 and plan.seconds is not None
    assert (summary.steps, summary.epochs) == (30, 10)  # followed
    printed = said.index("training plan: the local trainer on local:" + str(tiny))
    assert printed < next(i for i, line in enumerate(said) if line.startswith("training record"))
    assert "  schedule: 30 optimizer steps (10 epochs x 3 batches of 2 over 6 sequences)" in said[printed + 2]
    [folder] = (ws.data_dir / "training").iterdir()
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert record.plan == plan and (record.settings.epochs, record.settings.batch_size) == (10, 2)
    metrics = (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(metrics) == 30


async def test_a_smoke_run_trains_two_steps_through_a_saved_state_and_keeps_nothing(
    tiny: Path, tmp_path: Path
) -> None:
    ws = await taught(tmp_path / "ws", tiny)
    runs = len(list(ws.store.iter_runs("bye")))
    versions = ws.machines_dir / "bye" / "versions.json"
    check = await check_training(ws, "bye", any_model=True, smoke=True, make_trainer=make_trainer)
    smoke = check.smoke
    assert smoke is not None
    assert [m.step for m in smoke.steps] == [1, 2] and smoke.resumed_at == 1
    assert all(m.loss is not None and m.loss > 0 for m in smoke.steps)
    assert smoke.checkpoint.startswith(f"local:{tiny}+") and smoke.case_id == "c0"
    assert smoke.output_tokens >= 1
    assert check.plan.steps == 30  # the plan of the real training, reported beside it
    # nothing kept: no record, no folder, no candidate, no run
    assert not (ws.data_dir / "training").exists()
    assert [p.name for p in ws.data_dir.iterdir() if p.name.startswith("smoke")] == []
    assert not versions.exists() and len(list(ws.store.iter_runs("bye"))) == runs


async def test_a_dpo_training_learns_from_the_pairs_of_marked_runs(tiny: Path, tmp_path: Path) -> None:
    """Each teacher run (good by its grade) paired with a run of the same prompt a person marked bad: the
    plan counts the pairs, the record says DPO, and the gate measures the checkpoint as for SFT."""
    ws = await taught(tmp_path / "ws", tiny)
    for run in list(ws.store.iter_runs("bye")):
        worse = [*run.trajectory[:-1], Message(role="assistant", content="go away")]
        marked = {"trajectory": worse, "output": "go away", "tags": [Tag(kind="bad")]}
        ws.store.put(run.model_copy(update={"id": new_run_id(), **marked}))
    check = await check_training(ws, "bye", method="dpo", make_trainer=make_trainer)
    assert (check.plan.examples, check.plan.sequences, check.plan.steps) == (6, 6, 9)  # 3 epochs of 3
    assert check.plan.lines()[0].startswith("training plan: DPO at β 0.1 from the base model: the local")
    candidate = await train(ws, "bye", method="dpo", beta=0.2, trials=1, make_trainer=make_trainer)
    summary = candidate.report.training
    assert summary is not None and summary.steps == 9
    [folder] = (ws.data_dir / "training").iterdir()
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert (record.settings.method, record.settings.beta) == ("dpo", 0.2)
    assert record.selection.sources == {"preference pairs": 6}
    assert candidate.report.cases == 1 and candidate.report.after.runs > 0  # gated like any candidate
