"""The paths a training record gives the local trainer stay inside the workspace: a saved state to resume
from that a record names anywhere else (an absolute path, one climbing out with ``..``, a sibling folder
whose name starts like the workspace's, a symlink leading out) is refused before anything is loaded, naming
the record file; and a relative path in a local model id may not climb into a sibling folder either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from machine.budget import Budget
from machine.clients.local._models import local_path
from machine.clients.local._train_data import TrainSequence
from machine.clients.local.trainer import LocalTrainer
from machine.errors import BadInputError, HarnessError, MachineError
from machine.learn.train._record import RecordFolder
from machine.training import Checkpoint, Prepared, TrainSettings

BASE = "local:no-such-model"


class Opened(MachineError):
    """The trainer got past its checks and went on to load the model."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".machine" / "training" / "t1" / "states" / "step-1").mkdir(parents=True)
    for sibling in ("ws-other", "elsewhere"):
        (tmp_path / sibling / "states" / "step-1").mkdir(parents=True)
    return root


def prepared() -> Prepared:
    data = [TrainSequence([1, 2, 3], [-100, 2, 3]) for _ in range(4)]
    return Prepared(trainer="local", renderer="r", examples=4, sequences=4, learning_rate=1e-3, data=data)


def recorded(ws: Path, state: str) -> tuple[Path, Checkpoint | None]:
    """The record ``t1`` whose checkpoints.jsonl names ``state``, and the checkpoint read back from it."""
    folder = ws / ".machine" / "training" / "t1"
    line = {"model": f"{BASE}+x", "base_model": BASE, "step": 1, "state": state}
    (folder / "checkpoints.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return folder, RecordFolder(folder).last_checkpoint()


async def resume(ws: Path, state: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def opened(*_args: object) -> None:
        raise Opened("opened")

    monkeypatch.setattr(LocalTrainer, "_open", opened)
    folder, checkpoint = recorded(ws, state)
    settings = TrainSettings(base_model=BASE, batch_size=2, epochs=1)
    await LocalTrainer(root=ws).train(
        prepared(), settings, folder=folder, budget=Budget(0.0), on_step=lambda _m: None, resume=checkpoint
    )


@pytest.mark.parametrize(
    "state",
    [
        "{outside}/elsewhere/states/step-1",
        "{outside}/ws-other/states/step-1",
        "{outside}/ws/../ws-other/states/step-1",
        "../ws-other/states/step-1",
        ".machine/training/t1/../../../../ws-other/states/step-1",
    ],
)
async def test_a_state_the_record_names_outside_the_workspace_is_refused(
    ws: Path, state: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = state.format(outside=ws.parent)
    with pytest.raises(BadInputError, match="outside") as refused:
        await resume(ws, named, monkeypatch)
    message = str(refused.value)
    assert str(ws / ".machine" / "training" / "t1" / "checkpoints.jsonl") in message and named in message


async def test_a_symlink_in_the_record_that_leads_out_is_refused(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = ws / ".machine" / "training" / "t1" / "states" / "step-2"
    link.symlink_to(ws.parent / "ws-other" / "states" / "step-1")
    with pytest.raises(BadInputError, match="outside"):
        await resume(ws, ".machine/training/t1/states/step-2", monkeypatch)


async def test_a_state_inside_the_workspace_is_resumed_from(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Opened):
        await resume(ws, ".machine/training/t1/states/step-1", monkeypatch)
    with pytest.raises(Opened):
        await resume(ws, str(ws / ".machine" / "training" / "t1" / "states" / "step-1"), monkeypatch)


@pytest.mark.parametrize("path", ["../ws-other/adapter", "a/../../ws-other/adapter", "../ws/../ws-other/x"])
def test_a_relative_model_path_into_a_sibling_named_like_the_workspace_is_refused(
    ws: Path, path: str
) -> None:
    with pytest.raises(HarnessError, match="leaves the workspace"):
        local_path(path, ws)
    assert local_path("models/m", ws) == ws / "models" / "m"
