"""A training record's own folder and the files in it stay in the workspace: ``--resume`` of a record that
is a symlink leading out of ``.machine/training`` (or of a name that climbs out) is refused before anything
runs and nothing out there changes; a file of the record replaced by a symlink is never written through;
and the Tinker trainer resumes only from a state on Tinker (``tinker://``), never a path a record names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.training import Counting, Tutored, make_caps

from machine import BadInputError, NotFoundError, Workspace, open_workspace
from machine.budget import Budget
from machine.clients.tinker import TinkerTrainer
from machine.learn import TrainOptions, train
from machine.learn.train._record import RecordFolder, TrainingRecord
from machine.training import Checkpoint, Prepared, TrainSettings

SETTINGS = TrainOptions(batch_size=2)


async def trained(tmp_path: Path) -> tuple[Workspace, Path]:
    make_caps(tmp_path / "ws")
    ws = open_workspace(tmp_path / "ws", harness=Tutored(), budget="none")
    await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting())
    [folder] = (ws.data_dir / "training").iterdir()
    return ws, folder


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


async def test_resuming_a_record_that_is_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    ws, folder = await trained(tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside)
    record = TrainingRecord.model_validate_json((outside / "record.json").read_bytes())
    record.status, record.checkpoint = "stopped", None
    (outside / "record.json").write_text(record.model_dump_json(), encoding="utf-8")
    before = contents(outside)
    (folder.parent / "planted").symlink_to(outside, target_is_directory=True)
    with pytest.raises(BadInputError, match="outside") as refused:
        await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer=Counting(), resume="planted")
    assert "planted" in str(refused.value)
    assert contents(outside) == before


@pytest.mark.parametrize("name", ["..", ".", "../training", ""])
def test_a_record_name_that_climbs_out_names_no_record(tmp_path: Path, name: str) -> None:
    root = tmp_path / ".machine" / "training"
    root.mkdir(parents=True)
    (tmp_path / ".machine" / "record.json").write_text("{}", encoding="utf-8")
    with pytest.raises(NotFoundError, match="there is no training record"):
        RecordFolder.open(root, name)


async def test_a_record_file_replaced_by_a_symlink_is_not_written_through(tmp_path: Path) -> None:
    _, folder = await trained(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"mine\n")
    (folder / "train.log").unlink()
    (folder / "train.log").symlink_to(victim)
    (folder / "record.json").rename(folder / "kept.json")
    (folder / "record.json").symlink_to(victim)
    records = RecordFolder(folder)
    with pytest.raises(OSError):
        records.log("a line")
    records.write(TrainingRecord.model_validate_json((folder / "kept.json").read_bytes()))
    assert victim.read_bytes() == b"mine\n" and not (folder / "record.json").is_symlink()


async def test_the_tinker_trainer_resumes_only_from_a_state_on_tinker(tmp_path: Path) -> None:
    def no_service() -> object:
        raise AssertionError("the service was reached")

    trainer = TinkerTrainer(service=no_service)
    data = [object()]
    ready = Prepared(trainer="tinker", renderer="r", examples=1, sequences=1, learning_rate=1e-4, data=data)
    for state in ("/etc/passwd", "../ws-other/state", "file:///etc/passwd"):
        resume = Checkpoint(model="tinker://x/sampler_weights/s", base_model="m", step=0, state=state)
        with pytest.raises(BadInputError, match="tinker://") as refused:
            await trainer.train(
                ready, TrainSettings(base_model="m"), folder=tmp_path, budget=Budget(None),
                on_step=lambda _m: None, resume=resume,
            )  # fmt: skip
        assert state in str(refused.value)
