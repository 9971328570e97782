"""Secrets a run read never reach training data: a stored run whose tool printed a project ``.env`` (a key
also in the environment) is exported and trained on with no trace of the key, how many were redacted is
reported (the export report, the training record and its summary), and data without secrets is exported
and trained on exactly as before, the same bytes and the same sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers.learn_runs import calc_workspace, graded, read_rows
from helpers.secret_runs import ENVIRONMENT, KEY, SECRETS_PER_RUN, TOKEN, read_dotenv
from helpers.training import Counting, Tutored, make_caps

from machine import open_workspace
from machine.learn import TrainingRecord, TrainOptions, export, train
from machine.learn.train._record import examples_text
from machine.runs import to_openai


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


def test_export_leaves_no_trace_of_a_key_a_run_read_and_counts_it(secrets: None, tmp_path: Path) -> None:
    ws = calc_workspace(tmp_path / "ws")
    ws.store.put(read_dotenv(ws, "sum", "calc"))
    out = tmp_path / "out.jsonl"
    report = export(ws, "calc", out=out)
    text = out.read_text(encoding="utf-8")
    assert KEY not in text and TOKEN not in text and KEY[8:24] not in text
    assert report.redacted == SECRETS_PER_RUN
    [row] = read_rows(out)
    tool = row["messages"][3]["content"]
    assert tool == (
        "OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]\nMY_SERVICE_TOKEN=[REDACTED:MY_SERVICE_TOKEN]\nDEBUG=1\n"
    )
    assert row["messages"][4]["reasoning_content"] == "The key is [REDACTED:OPENAI_API_KEY]; done."


def test_a_key_of_a_known_shape_is_redacted_even_when_not_in_the_environment(tmp_path: Path) -> None:
    ws = calc_workspace(tmp_path / "ws")
    ws.store.put(read_dotenv(ws, "sum", "calc"))
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    text = (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    assert KEY not in text and TOKEN not in text and report.redacted == SECRETS_PER_RUN


def test_export_without_secrets_writes_the_runs_as_they_were(secrets: None, tmp_path: Path) -> None:
    ws = calc_workspace(tmp_path / "ws")
    run = graded(ws, "sum", 1.0)
    ws.store.put(run)
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    assert report.redacted == 0
    assert row["messages"] == to_openai(run.instructions, run.trajectory, send_reasoning=True)


async def test_train_leaves_no_trace_of_a_key_a_run_read_and_records_the_count(
    secrets: None, tmp_path: Path
) -> None:
    make_caps(tmp_path / "ws")
    ws = open_workspace(tmp_path / "ws", harness=Tutored(), budget="none")
    ws.store.put_many([read_dotenv(ws, c, "caps") for c in ("ann", "bob")])
    trainer = Counting()
    options = TrainOptions(batch_size=2, epochs=1, force=True)  # two examples: a short plan, forced
    candidate = await train(ws, "caps", trials=1, options=options, trainer=trainer, any_model=True)
    [examples] = trainer.prepared
    sent = examples_text(examples)
    assert len(examples) == 2 and KEY not in sent and TOKEN not in sent
    assert "[REDACTED:OPENAI_API_KEY]" in sent
    summary = candidate.report.training
    assert summary is not None and summary.redacted == 2 * SECRETS_PER_RUN
    folder = ws.data_dir / "training" / summary.record
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert record.redacted == 2 * SECRETS_PER_RUN
    for written in folder.iterdir():
        assert KEY.encode() not in written.read_bytes(), written.name


async def test_train_without_secrets_pins_the_same_data_as_before(secrets: None, tmp_path: Path) -> None:
    make_caps(tmp_path / "ws")
    ws = open_workspace(tmp_path / "ws", harness=Tutored(), budget="none")
    runs = [graded(ws, c, 1.0, machine="caps") for c in ("ann", "bob")]
    ws.store.put_many(runs)
    trainer = Counting()
    options = TrainOptions(batch_size=2, epochs=1, force=True)  # two examples: a short plan, forced
    candidate = await train(ws, "caps", trials=1, options=options, trainer=trainer, any_model=True)
    [examples] = trainer.prepared
    by_run = {run.id: run for run in runs}
    assert [e.messages for e in examples] == [
        to_openai(by_run[e.run_id].instructions, by_run[e.run_id].trajectory, send_reasoning=True)
        for e in examples
    ]
    summary = candidate.report.training
    assert summary is not None and summary.redacted == 0
    record = TrainingRecord.model_validate_json(
        (ws.data_dir / "training" / summary.record / "record.json").read_bytes()
    )
    assert record.datasets[0].sha256 == hashlib.sha256(examples_text(examples).encode()).hexdigest()


def test_a_value_from_the_projects_dotenv_is_redacted_wherever_it_appears(tmp_path: Path) -> None:
    ws = calc_workspace(tmp_path / "ws")
    (ws.root / ".env").write_text('export DB_PASSWORD="opensesame-mellon"\nPORT=8080\n', encoding="utf-8")
    said = "Connected as admin with opensesame-mellon on port 8080."
    run = graded(ws, "sum", 1.0)
    run.trajectory[2] = run.trajectory[2].model_copy(update={"content": said})
    ws.store.put(run)
    report = export(ws, "calc", out=tmp_path / "out.jsonl")
    [row] = read_rows(tmp_path / "out.jsonl")
    assert row["messages"][3]["content"] == "Connected as admin with [REDACTED:DB_PASSWORD] on port 8080."
    assert report.redacted == 1
