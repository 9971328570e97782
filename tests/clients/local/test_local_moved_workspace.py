"""A workspace that trained a local model and committed the checkpoint keeps working once moved (or cloned)
elsewhere: the checkpoint is recorded relative to the workspace root, in the training record, the candidate
and model.json, and read from wherever the workspace now is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.bye import write_bye
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine import open_workspace  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.learn import TrainOptions, train  # noqa: E402
from machine.ops import make_trainer  # noqa: E402
from machine.versions import commit  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    _local_models.forget()


async def test_a_committed_checkpoint_loads_and_samples_after_the_workspace_moves(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    teacher = open_workspace(root, harness="scripted", script=write_bye(root, tiny), budget="none")
    spec = teacher.load("bye")
    for case in teacher.cases(spec):
        assert (await teacher.run(spec, case.input, case=case, trial=0, grade=True)).score == 1.0
    local = teacher.using(harness=LocalHarness(max_new_tokens=4, temperature=0.0))
    options = TrainOptions(epochs=1, batch_size=3, lr=1e-3, force=True)  # a step or two: the paths are tested
    candidate = await train(
        local, "bye", trials=1, best_of=1, options=options, any_model=True, make_trainer=make_trainer
    )
    [record] = (root / ".machine" / "training").iterdir()
    named = f"local:{tiny}+.machine/training/{record.name}/adapter"
    assert candidate.version.model == named
    saved = json.loads((record / "record.json").read_text(encoding="utf-8"))["checkpoint"]
    assert (saved["model"], saved["state"]) == (named, f".machine/training/{record.name}/states/step-1")
    commit(local, "bye", force=True)
    model_json = (root / "machines" / "bye" / "model.json").read_text(encoding="utf-8")
    assert named in model_json and str(root) not in model_json

    moved = tmp_path / "clone"
    root.rename(moved)
    monkeypatch.chdir(tmp_path)  # neither the old place nor the new one
    ws = open_workspace(moved, harness=LocalHarness(max_new_tokens=4, temperature=0.0), budget="none")
    spec = ws.load("bye")
    assert spec.model == named
    run = await ws.run(spec, "hello 9")
    assert (run.status, run.error, run.model) == ("ok", None, named)
    assert run.usage.output_tokens >= 1
    adapters = {s.adapter for s in _local_models._LOADED}
    assert str((moved / ".machine" / "training" / record.name / "adapter").resolve()) in adapters
