"""RL through ``train`` on a tiny model made in the test, with a synthetic check reward (the share of a
reply's characters that are vowels, so every sample scores in between): the plan is printed before
anything runs, each step samples groups of the policy, stores them marked as the training's samples,
records its rewards beside its loss, and the checkpoint faces the held-out gate; a resumed training
reaches the weights of one never stopped; the samples are never selected as good runs unmarked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine import Workspace, open_workspace  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.learn import ExportOptions, TrainingRecord, export, train  # noqa: E402
from machine.learn.rl import RLOptions  # noqa: E402
from machine.ops import make_trainer  # noqa: E402
from machine.training import StepMetrics  # noqa: E402
from machine.workspace import tag_run  # noqa: E402

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, model_from

rubric = define_rubric({"vowels": "The reply is mostly vowels."})


def vowels(run):
    text = run.output.strip()
    return sum(c in "aeiou" for c in text) / len(text) if text else 0.0


machine = define_machine(
    name="vow",
    intent="Speak in vowels.",
    instructions="Answer.",
    model=model_from(__file__, "local:MODEL"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"vowels": check("vowels", vowels)}),
    max_steps=1,
)
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model", seed=3)
    _local_models.forget()


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def workspace(root: Path, model: Path) -> Workspace:
    folder = root / "machines" / "vow"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY.replace("MODEL", str(model)), encoding="utf-8")
    cases = [{"id": f"c{i}", "input": f"say {i}"} for i in range(4)]
    (folder / "cases.json").write_text(json.dumps([*cases, {"id": "h", "input": "hold"}]), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps([{"id": "h", "input": "hold"}]), encoding="utf-8")
    ws = open_workspace(root, budget="none")
    return ws.using(harness=LocalHarness(max_new_tokens=6, temperature=1.0))


RL = RLOptions(group=4, cases_per_step=2, rl_steps=6, max_tokens=16)


async def test_rl_trains_on_its_own_graded_samples_and_faces_the_gate(tiny: Path, tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", tiny)
    said: list[str] = []
    steps: list[StepMetrics] = []
    candidate = await train(
        ws, "vow", method="rl", rl=RL, lr=5e-2, trials=2, make_trainer=make_trainer,
        on_phase=said.append, on_step=steps.append,
    )  # fmt: skip
    assert said[0].startswith("RL plan: 0 judge calls, about ") and "training tokens" in said[0]
    assert [m.step for m in steps] == list(range(1, 7))
    for metrics in steps:
        assert metrics.rl is not None and metrics.rl.rollouts == 8 and metrics.rl.failed == 0
        assert metrics.rl.reward is not None and 0 <= metrics.rl.reward <= 1
        assert set(metrics.rl.criteria) == {"vowels"}
    trained = [m for m in steps if m.rl is not None and m.rl.trained]
    assert trained and all(m.loss is not None and m.rl and m.rl.grad_norm is not None for m in trained)
    samples = [r for r in ws.store.iter_runs("vow") if r.sampled_for is not None]
    assert len(samples) == 48 and all(r.case_id != "h" for r in samples)
    assert all(r.scorecard is not None for r in samples)
    [folder] = (ws.data_dir / "training").iterdir()
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert record.settings.method == "rl" and record.rl == RL and record.rl_plan is not None
    assert record.status == "trained" and record.steps == 6 and record.sampled == 48
    assert {r.sampled_for for r in samples} == {f"{record.id} step {n}" for n in range(1, 7)}
    summary = candidate.report.training
    assert summary is not None and len(summary.rewards) == 6 and summary.steps == 6
    assert candidate.report.after.runs > 0 and candidate.version.model.endswith("/adapter")
    out = tmp_path / "out.jsonl"
    with pytest.raises(BadInputError, match="no run"):  # the samples are not good runs to copy
        export(ws, "vow", ExportOptions(out=out, min_score=0.0))
    tag_run(ws.store, samples[0], "good")
    assert export(ws, "vow", ExportOptions(out=out, min_score=0.0)).runs == 1  # a person's mark
    assert export(ws, "vow", ExportOptions(out=out, min_score=0.0, rl_samples=True)).runs == 48


async def test_options_of_rl_with_another_method_or_selection_options_are_refused() -> None:
    from machine.learn import TrainOptions

    with pytest.raises(BadInputError, match="train with method rl"):
        TrainOptions(rl=RL)
    with pytest.raises(BadInputError, match="min_score, epochs are for choosing"):
        TrainOptions(method="rl", min_score=0.5, epochs=2)


def adapter_weights(folder: Path) -> dict[str, object]:
    from safetensors.torch import load_file

    return dict(load_file(str(folder / "adapter" / "adapter_model.safetensors")))


async def test_rl_stopped_mid_way_resumes_to_the_weights_of_a_training_never_stopped(
    tiny: Path, tmp_path: Path
) -> None:
    """Sampled one run at a time: batched, a row's numbers (and so, rarely, a token drawn) depend on the
    rows it shares a batch with, which the timing of the runs decides."""
    import torch

    one_at_a_time = {"method": "rl", "rl": RL, "lr": 5e-2, "trials": 1, "concurrency": 1}
    whole = workspace(tmp_path / "whole", tiny)
    await train(whole, "vow", make_trainer=make_trainer, **one_at_a_time)
    [whole_folder] = (whole.data_dir / "training").iterdir()

    ws = workspace(tmp_path / "stopped", tiny)

    def stop_at_three(metrics: StepMetrics) -> None:
        if metrics.step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await train(ws, "vow", make_trainer=make_trainer, on_step=stop_at_three, **one_at_a_time)
    [folder] = (ws.data_dir / "training").iterdir()
    stopped = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert stopped.status == "stopped" and stopped.steps == 3
    other = {**one_at_a_time, "rl": RL.model_copy(update={"group": 2})}
    with pytest.raises(BadInputError, match="cannot be resumed"):  # not the same training
        await train(ws, "vow", resume=stopped.id, make_trainer=make_trainer, **other)
    steps: list[StepMetrics] = []
    await train(
        ws, "vow", resume=stopped.id, make_trainer=make_trainer, on_step=steps.append, **one_at_a_time
    )
    assert [m.step for m in steps] == [4, 5, 6]
    ours, theirs = adapter_weights(whole_folder), adapter_weights(folder)
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours), "the resumed training's weights differ"  # type: ignore[arg-type]
