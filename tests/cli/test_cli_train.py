"""``machine train`` on a workspace of its own (``caps``, tests/helpers/training.py) with the scripted
harness. The command names its trainer (``--trainer``; Tinker by default, a service no machine here
reaches), so the runs that train go through click's runner in this process with the trainer the command
looks up by name answered by the in-process one; everything a person can get wrong goes through the real
console script: one ``error:`` line and exit status 2."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import Result
from helpers.training import BASE, HELD_OUT, TRAIN_CASES, Counting, make_caps

from machine.clients import TRAINERS, TrainerEntry

if TYPE_CHECKING:
    from conftest import Command


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The workspace, and a script that answers the training cases right and anything else wrongly."""
    make_caps(tmp_path / "ws")
    rules = [{"match": f"^{c['input']}$", "turns": [{"text": c["input"].upper()}]} for c in TRAIN_CASES]
    script = {"rules": [*rules, {"match": ".", "turns": [{"text": "no idea"}]}]}
    (tmp_path / "ws" / "script.json").write_text(json.dumps(script), encoding="utf-8")
    return tmp_path / "ws"


def common(root: Path) -> list[str]:
    return ["--harness", "scripted", "--script", str(root / "script.json"), "--workspace", str(root)]


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    """The trainer ``--trainer counting`` names, in this process."""
    trainer = Counting()
    monkeypatch.setitem(TRAINERS, "counting", TrainerEntry(lambda _request: trainer))
    return trainer


def one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


TRAIN = ["train", "caps", "--trainer", "counting", "--any-model", "--samples", "1", "--trials", "1"]


def test_train_prints_its_phases_steps_and_the_report(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    short = invoke(*TRAIN, "--batch-size", "2", "--epochs", "2", *common(root))
    assert short.exit_code == 2 and counting.steps == []
    # refused before sampling: even if each of the 3 cases gave its best 2 runs, 6 steps at most
    said = "this training would take at most 6 optimizer steps (2 epochs x 3 batches of 2 over 6 sequences)"
    assert said in short.stderr
    assert "pass --epochs 10 for 30 steps" in short.stderr and "pass --force to train on" in short.stderr
    assert "spent $" not in short.stderr and "sampling" not in short.stderr
    assert not (root / ".machine" / "training").exists()  # and before a record was made
    result = invoke(*TRAIN, "--batch-size", "2", "--epochs", "2", "--force", *common(root))
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert f"training plan: the counting trainer on {BASE}" in err
    assert "schedule: 4 optimizer steps (2 epochs x 2 batches of 2 over 3 sequences) (at least 30" in err
    assert f"sampling 1 runs of each case on {BASE}" in err
    [record] = (root / ".machine" / "training").iterdir()
    assert f"training record {record.name}: 3 examples from 3 runs (3 of {BASE} on scripted)" in err
    assert "  step 1 (epoch 1): loss 2.0000" in err and "  step 4 (epoch 2): loss 0.5000" in err
    assert "step 5" not in err  # 3 sequences, 2 a step, 2 epochs
    checkpoint = f"good:{record.name}:4"
    assert f"trained: {checkpoint}" in err and f"proposing {checkpoint} against v1 on holdout.json" in err
    out = result.stdout
    assert f"caps: candidate v2 ({checkpoint}) against live v1 ({BASE})" in out
    assert f"training {record.name}: counting on {BASE} (characters/4)" in out
    assert "3 runs (3 sampled for it) -> 3 examples -> 3 sequences" in out
    assert "2 epochs, 4 steps at learning rate 0.0001; loss 1.5000 -> 0.5833 (epoch means)" in out
    # the scripted harness answers the same whichever model it is given: no gain, so no pass
    assert "v2 is pending but did not pass the gate: `machine commit caps` refuses it" in out
    assert counting.steps == [1, 2, 3, 4]


def test_train_json_prints_the_candidate_version(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    result = invoke(*TRAIN, "--json", "--lr", "0.001", "--rank", "8", *common(root))
    assert result.exit_code == 0, result.output
    version = json.loads(result.stdout)
    [record] = (root / ".machine" / "training").iterdir()
    # 3 sequences: batches of 2, and 15 epochs for the 30 steps a default plan reaches
    assert (version["number"], version["status"], version["model"]) == (
        2,
        "pending",
        f"good:{record.name}:30",
    )
    assert version["base_model"] == BASE
    training = version["report"]["training"]
    assert (training["record"], training["examples"], training["learning_rate"]) == (record.name, 3, 0.001)
    assert (training["plan"]["batch_size"], training["plan"]["epochs"], training["plan"]["steps"]) == (
        2,
        15,
        30,
    )
    assert "step 1" not in result.stderr
    settings = json.loads((record / "record.json").read_text(encoding="utf-8"))["settings"]
    assert (settings["learning_rate"], settings["rank"]) == (0.001, 8)


def test_an_unknown_trainer_is_one_error_line(machine_cmd: Command, root: Path) -> None:
    result = machine_cmd("train", "caps", "--trainer", "nope", *common(root))
    one_error_line(result, "there is no trainer 'nope'", "the trainers are: tinker")
    assert not (root / ".machine" / "training").exists()


def error_line(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_replayed_runs_without_any_model_name_the_filter(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    result = invoke("train", "caps", "--trainer", "counting", "--samples", "1", *common(root))
    error_line(result, f"only runs {BASE} produced itself are kept", "--samples", "--any-model")
    assert counting.prepared == []


def test_an_unknown_record_to_resume_names_the_records(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    result = invoke("train", "caps", "--trainer", "counting", "--resume", "nope", *common(root))
    error_line(result, "there is no training record 'nope'", "the records are: none")


def test_an_unpriced_base_under_a_budget_is_refused(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    (root / "machines" / "caps" / "model.json").write_text('{"model": "acme/unpriced"}\n', encoding="utf-8")
    args = ["train", "caps", "--trainer", "counting", "--samples", "2", "--budget", "1", *common(root)]
    error_line(invoke(*args), "'train:acme/unpriced' has no known price")
    assert not (root / "machines" / "caps" / "versions.json").exists()
    assert not (root / ".machine" / "training").exists()


@pytest.mark.parametrize(
    "bad",
    [
        ["--samples", "-1"], ["--epochs", "0"], ["--lr", "0"], ["--best-of", "0"], ["--rank", "x"],
        ["--lora-alpha", "0"], ["--lora-dropout", "1"], ["--target-modules", " , "],
        ["--target-modules", "q_proj;rm -rf"],
    ],
)  # fmt: skip
def test_bad_options_exit_2_with_one_error_line(machine_cmd: Command, root: Path, bad: list[str]) -> None:
    result = machine_cmd("train", "caps", *bad, *common(root))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"error: invalid value for '{bad[0]}'" in result.stderr
    assert not (root / ".machine").exists()


def test_a_training_the_budget_stops_says_how_to_resume_and_resumes(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    assert invoke("suite", "caps", "--trials", "1", *common(root)).exit_code == 0
    args = ["train", "caps", "--trainer", "counting", "--any-model", "--trials", "1", "--batch-size", "1"]
    # the first step costs more than the whole budget, so the second is refused
    stopped = invoke(*args, "--budget", "0.0001", *common(root))
    [record] = (root / ".machine" / "training").iterdir()
    line = error_line(stopped, f"training {record.name} stopped after step 1", "is spent")
    assert line.endswith(f"pass --resume {record.name} to go on from its last checkpoint")
    assert "  step 1 (epoch 1)" in stopped.stderr and "step 2" not in stopped.stderr
    resumed = invoke(*args, "--resume", record.name, *common(root))
    assert resumed.exit_code == 0, resumed.output
    assert "step 1 " not in resumed.stderr and "  step 3 (epoch 1)" in resumed.stderr
    assert [c.step if c else None for c in counting.resumed] == [None, 1]
    assert f"training {record.name}: counting" in resumed.stdout


SHAPE = [
    "--lora-alpha",
    "8",
    "--lora-dropout",
    "0",
    "--target-modules",
    "q_proj, v_proj",
    "--max-length",
    "64",
]


def test_the_adapter_shape_is_recorded_and_a_resume_must_keep_it(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    counting.takes = ("lora_alpha", "lora_dropout", "target_modules")  # type: ignore[attr-defined]
    assert invoke("suite", "caps", "--trials", "1", *common(root)).exit_code == 0
    args = ["train", "caps", "--trainer", "counting", "--any-model", "--trials", "1", "--batch-size", "1"]
    stopped = invoke(*args, *SHAPE, "--budget", "0.0001", *common(root))
    [record] = (root / ".machine" / "training").iterdir()
    error_line(stopped, f"training {record.name} stopped after step 1")
    settings = json.loads((record / "record.json").read_text(encoding="utf-8"))["settings"]
    shape = (
        settings["lora_alpha"],
        settings["lora_dropout"],
        settings["target_modules"],
        settings["max_length"],
    )
    assert shape == (8, 0.0, ["q_proj", "v_proj"], 64)
    other = [*SHAPE[:1], "16", *SHAPE[2:4], "--target-modules", "q_proj"]
    changed = invoke(*args, *other, "--max-length", "32", "--resume", record.name, *common(root))
    line = error_line(changed, f"training {record.name} cannot be resumed")
    assert "settings.lora_alpha was 8, now 16" in line and "settings.max_length was 64, now 32" in line
    assert 'settings.target_modules was ["q_proj", "v_proj"], now ["q_proj"]' in line
    resumed = invoke(*args, *SHAPE, "--resume", record.name, *common(root))
    assert resumed.exit_code == 0, resumed.output
    assert [c.step if c else None for c in counting.resumed] == [None, 1]


@pytest.mark.parametrize(
    "shape",
    [["--target-modules", "q_proj"], ["--lora-alpha", "4", "--lora-dropout", "0.1"], ["--kl", "0.5"]],
)
def test_a_trainer_that_does_not_take_the_adapter_shape_refuses_it(
    machine_cmd: Command, root: Path, shape: list[str]
) -> None:
    result = machine_cmd("train", "caps", "--any-model", *shape, *common(root))  # Tinker's model: its trainer
    shown = {"--target-modules": "target modules", "--kl": "a KL penalty"}.get(
        shape[0], "a LoRA alpha, a LoRA dropout"
    )
    one_error_line(result, f"the tinker trainer does not take {shown}", "train a local: model")
    assert not (root / ".machine" / "training").exists()


def files_of(root: Path) -> dict[Path, bytes]:
    """Every file's bytes, but SQLite's shared-memory index, which a reader rewrites."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.name.endswith("-shm")}


def test_a_dry_run_prints_the_plan_and_spends_and_writes_nothing(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    first = invoke(*TRAIN, "--batch-size", "2", "--epochs", "1", "--force", *common(root))
    assert first.exit_code == 0, first.output  # a training, for stored runs to plan on
    before = files_of(root)
    counting.steps.clear()
    dry = invoke("train", "caps", "--trainer", "counting", "--any-model", "--dry-run", *common(root))
    assert dry.exit_code == 0, dry.output
    out = dry.stdout
    assert f"training plan: the counting trainer on {BASE}" in out
    assert "  data: 3 examples (3 whole, 0 per step) -> 3 sequences" in out
    assert "  schedule: 30 optimizer steps (15 epochs x 2 batches of 2 over 3 sequences)" in out
    assert "  epochs 15: raised until at least 30 steps" in out
    assert counting.steps == [] and "spent" not in dry.stderr
    assert files_of(root) == before  # nothing written
    short = ["train", "caps", "--trainer", "counting", "--any-model", "--epochs", "1", "--dry-run", "--json"]
    shown = invoke(*short, *common(root))
    assert shown.exit_code == 0, shown.output
    check = json.loads(shown.stdout)
    assert (check["plan"]["steps"], check["plan"]["epochs"], check["plan"]["min_steps"]) == (2, 1, 30)
    assert check["refused"].startswith("this training would take 2 optimizer steps")
    assert check["smoke"] is None


def test_a_smoke_run_trains_two_steps_and_keeps_no_record(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    first = invoke(*TRAIN, "--samples", "1", "--batch-size", "2", "--force", "--epochs", "1", *common(root))
    assert first.exit_code == 0, first.output
    [record] = (root / ".machine" / "training").iterdir()
    counting.steps.clear()
    smoke = invoke("train", "caps", "--trainer", "counting", "--any-model", "--smoke", *common(root))
    assert smoke.exit_code == 0, smoke.output
    # step 1, then step 2 from the state step 1 saved
    assert counting.steps == [1, 2] and [c and c.step for c in counting.resumed[-2:]] == [None, 1]
    assert "smoke: 2 steps (loss 2.0000, 1.0000), a state saved and loaded at step 1" in smoke.stdout
    assert "discarded: no training record, no candidate, no run stored" in smoke.stdout
    assert [p.name for p in (root / ".machine" / "training").iterdir()] == [record.name]
    assert "spent $" in smoke.stderr


def test_training_list_and_show_read_the_records(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    assert invoke(*TRAIN, *common(root)).exit_code == 0
    [record] = (root / ".machine" / "training").iterdir()
    listed = invoke("training", "list", "--workspace", str(root))
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.startswith(f"{record.name}  caps  counting on {BASE}  30/30 steps  candidate v2: ")
    assert "pending, not passed" in listed.stdout  # the script answers the held-out cases wrongly
    assert (
        json.loads(invoke("training", "list", "caps", "--json", "--workspace", str(root)).stdout)[0]["id"]
        == record.name
    )
    assert invoke("training", "list", "other", "--workspace", str(root)).stdout == (
        "no training records of machine 'other'\n"
    )
    shown = invoke("training", "show", record.name, "--workspace", str(root))
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert f"training {record.name}: caps, the counting trainer on {BASE}" in out
    assert "  schedule: 30 optimizer steps (15 epochs x 2 batches of 2 over 3 sequences)" in out
    assert (
        "  gate: machines/caps/holdout.json (sha256 " in out and "v1 baseline mean 0.000 over 6 runs" in out
    )
    assert "  loss █" in out and "  loss by epoch: 1.5000 -> 0.5833 -> " in out
    assert "  step  epoch  loss      tokens  seconds" in out and "    30     15  0.0667" in out
    data = json.loads(invoke("training", "show", record.name, "--json", "--workspace", str(root)).stdout)
    assert len(data["steps"]) == 30 and data["record"]["plan"]["steps"] == 30
    missing = invoke("training", "show", "nope", "--workspace", str(root))
    assert missing.exit_code == 2 and "there is no training record 'nope'" in missing.stderr
    assert record.name in missing.stderr


def test_a_trainer_without_dpo_refuses_preference_pairs(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    result = invoke("train", "caps", "--trainer", "counting", "--any-model", "--method", "dpo", *common(root))
    assert result.exit_code == 2 and counting.steps == []
    assert "DPO at β 0.1 from the base model: 3 epochs of batches of at most 8" in result.stderr  # the plan
    assert "the counting trainer does not train on preference pairs (dpo)" in result.stderr
    assert "Tinker's, or the local trainer for a local: model" in result.stderr
    assert not (root / ".machine" / "training").exists()


def test_train_and_its_dry_run_say_the_gate_cannot_pass_on_four_held_out_cases(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    (root / "machines" / "caps" / "holdout.json").write_text(json.dumps(HELD_OUT[:4]), encoding="utf-8")
    thin = "warning: no candidate can pass the gate: holdout.json holds only 4 held-out cases, and at min_z 2"
    trained = invoke(*TRAIN, "--batch-size", "2", "--epochs", "1", "--force", *common(root))
    assert trained.exit_code == 0, trained.output
    said = trained.stderr.splitlines()
    warned = next(i for i, line in enumerate(said) if line.startswith(thin))
    assert said[warned - 1].startswith("plan: train 'caps'")
    assert warned < next(i for i, line in enumerate(said) if line.startswith("sampling"))  # before any run
    dry = invoke("train", "caps", "--trainer", "counting", "--any-model", "--dry-run", *common(root))
    assert dry.exit_code == 0, dry.output
    assert thin in dry.stdout
    shown = invoke(
        "train", "caps", "--trainer", "counting", "--any-model", "--dry-run", "--json", *common(root)
    )
    [warning] = json.loads(shown.stdout)["warnings"]
    assert f"warning: {warning}".startswith(thin)


def test_rl_dry_run_prints_its_priced_plan_and_a_trainer_without_rl_refuses_it(
    invoke: Callable[..., Result], root: Path, counting: Counting
) -> None:
    rl = ["--method", "rl", "--group", "4", "--cases-per-step", "2", "--rl-steps", "3"]
    dry = invoke("train", "caps", *rl, "--trials", "1", "--dry-run", *common(root))
    assert dry.exit_code == 0, dry.output
    assert "plan: train 'caps'" in dry.stdout and "at most 36 runs" in dry.stdout  # 24 samples, 12 gate runs
    assert "a group of 4 of each of 2 cases a step, graded" in dry.stdout
    assert "3 RL steps of 8 samples (importance_sampling, one optimizer step each)" in dry.stdout
    assert "judge call" in dry.stdout and "training tokens" in dry.stdout
    assert not (root / ".machine").exists()
    refused = invoke("train", "caps", "--trainer", "counting", *rl, *common(root))
    assert refused.exit_code == 2 and counting.steps == []
    assert "the counting trainer does not learn by reinforcement (rl)" in refused.stderr
    assert not (root / ".machine" / "training").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--group", "4"], "the rl options shape training by reinforcement; sft learns from stored runs"),
        (["--method", "rl", "--epochs", "2"], "epochs is for choosing or scheduling stored runs"),
        (["--method", "rl", "--clip", "0.1"], "clip shapes the ppo loss only"),
        (["--method", "rl", "--smoke"], "for rl, train one step: --rl-steps 1"),
    ],
)
def test_rl_options_out_of_place_are_one_error_line(
    machine_cmd: Command, root: Path, args: list[str], said: str
) -> None:
    one_error_line(machine_cmd("train", "caps", *args, *common(root)), said)
    assert not (root / ".machine").exists()
