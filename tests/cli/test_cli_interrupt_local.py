"""One Ctrl-C stops a command working on a local model (a tiny one made here) with exit status 130 and a
line saying what was kept, while the model's generator thread is still inside torch: the interpreter's
teardown under such a thread aborted the process with status 134 instead. A training stopped before its
first step leaves a record ``--resume`` goes on from; one stopped by SIGTERM mid-way (``timeout``, CI,
``kill``) is recorded with the steps it did, and ``--resume`` says where it goes on.

Each test waits for the line that shows the work it stops has begun (a run finished, a step logged),
however long a loaded machine takes to get there, and only bounds that wait generously: none depends on
how fast the machine is."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.stopping import NOISE, Started, start
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.clients.local import _models as _local_models  # noqa: E402

LONG = {"MACHINE_LOCAL_MAX_TOKENS": "400"}
"""Replies long enough that a Ctrl-C lands while the model is generating one."""
SHORT = {"MACHINE_LOCAL_MAX_TOKENS": "4"}
BEGUN_WITHIN_S = 900.0
"""The most a test waits for the line that shows the work began (loading torch and a model, then a first
reply or step): a bound for a machine that is stuck, not a wait; the line comes in seconds when idle."""
STOPPED_WITHIN_S = 120.0
"""The most a stopped command may take to exit (a row stops after its next token, a step after it ends)."""
FINISHED_WITHIN_S = 1800.0
"""The most a resumed training may take to finish, on a loaded machine."""
ABORTED = ("terminate called", "Aborted", "core dumped")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    _local_models.forget()


def signoff_on(tmp_path: Path, model: str) -> Path:
    """A workspace with signoff on ``model``."""
    folder = tmp_path / "ws" / "machines" / "signoff"
    shutil.copytree(REPO / "machines" / "signoff", folder)
    (folder / "model.json").write_text(json.dumps({"model": model}), encoding="utf-8")
    return tmp_path / "ws"


@pytest.fixture
def root(tmp_path: Path, tiny: Path) -> Path:
    return signoff_on(tmp_path, f"local:{tiny}")


def wait_for(started: Started, text: str, *, out: bool = False, within: float = BEGUN_WITHIN_S) -> None:
    """Poll the command's stderr (or stdout), for at most ``within`` seconds, until it says ``text``."""
    deadline = time.monotonic() + within
    while text not in (started.out if out else started.err).read_text():
        assert started.process.poll() is None, ("ended early", started.err.read_text())
        assert time.monotonic() < deadline, (f"never said {text!r}", started.err.read_text())
        time.sleep(0.02)


def stopped_cleanly(started: Started, sig: int = signal.SIGINT, status: int = 130) -> str:
    ended, took, _out, err = started.stopped(sig, within=STOPPED_WITHIN_S)
    assert ended == status, err
    assert took < STOPPED_WITHIN_S, took
    assert not any(noise in err for noise in (*NOISE, *ABORTED)), err
    return err


def taught(root: Path) -> None:
    """signoff's teacher: a scripted model's good run of each case, stored in ``root``."""
    script = REPO / "machines" / "signoff" / "script.json"
    teacher = [
        "suite", "signoff", "--harness", "scripted", "--script", script, "--model", "teacher",
        "--budget", "none", "--workspace", root,
    ]  # fmt: skip
    done = subprocess.run(
        [str(MACHINE_BIN), *map(str, teacher)], capture_output=True, text=True, env=clean_env(),
        timeout=BEGUN_WITHIN_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_ctrl_c_in_a_local_suite_ends_with_130_while_the_model_generates(root: Path, tmp_path: Path) -> None:
    started = start(tmp_path, "suite", "signoff", "--verbose", "--workspace", root, env=LONG)
    wait_for(started, "[1/", out=True)  # the first run's line: the model is loaded, generating the next
    err = stopped_cleanly(started)
    assert "interrupted: suite " in err and "continue it with: " in err


@pytest.mark.slow
def test_ctrl_c_in_a_suite_on_the_bundled_model_ends_with_130(tmp_path: Path) -> None:
    """Where the abort was seen: SmolLM2's matrix products run on torch's worker threads."""
    root = signoff_on(tmp_path, "local:smollm2-135m")
    started = start(
        tmp_path, "suite", "signoff", "--verbose", "--workspace", root, env={"MACHINE_LOCAL_MAX_TOKENS": "64"}
    )
    wait_for(started, "[1/", out=True)
    assert "interrupted: suite " in stopped_cleanly(started)


@pytest.mark.slow
def test_ctrl_c_while_the_gate_is_fixed_leaves_a_record_resume_finishes(root: Path, tmp_path: Path) -> None:
    taught(root)
    args = ["train", "signoff", "--any-model", "--trials", "1", "--budget", "none", "--workspace", root]
    started = start(tmp_path, *args, env=LONG)
    wait_for(started, "fixing the gate before training")
    wait_for(started, "  [1/9] ")  # a run of the live version is measured: the model is loaded, generating
    err = stopped_cleanly(started)
    [record] = (root / ".machine" / "training").iterdir()
    assert json.loads((record / "record.json").read_text())["status"] == "stopped"
    assert f"resume it: `machine train signoff --resume {record.name}`" in err  # as a command to paste
    resumed = subprocess.run(
        [str(MACHINE_BIN), *map(str, args), "--resume", record.name],
        capture_output=True, text=True, env=clean_env(SHORT), timeout=FINISHED_WITHIN_S, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"training record {record.name}" in resumed.stderr
    assert json.loads((record / "record.json").read_text())["status"] == "trained"


@pytest.mark.slow
def test_sigterm_mid_training_records_its_steps_and_resume_says_where_it_goes_on(
    root: Path, tmp_path: Path
) -> None:
    taught(root)
    args = [  # 320 steps of one sequence: SIGTERM comes long before the last
        "train", "signoff", "--any-model", "--trials", "1", "--batch-size", "1", "--epochs", "20",
        "--budget", "none", "--workspace", root,
    ]  # fmt: skip
    started = start(tmp_path, *args, env=SHORT)
    wait_for(started, "  step 1 (epoch 1)")
    err = stopped_cleanly(started, signal.SIGTERM, 143)
    assert "terminated" in err
    # the gate's measurement said how far it got, in plain lines (stderr is a file here)
    assert "measuring v1 on holdout.json: 9 runs" in err and "  [9/9] " in err
    [folder] = (root / ".machine" / "training").iterdir()
    record = json.loads((folder / "record.json").read_text())
    steps = record["steps"]
    assert record["status"] == "stopped" and 1 <= steps < 320, record
    assert record["error"] == f"stopped from outside after step {steps}"
    logged = [json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, steps + 1))
    saved = [json.loads(line)["step"] for line in (folder / "checkpoints.jsonl").read_text().splitlines()]
    assert saved[-1] == steps  # the state saved on the way out: nothing trained is lost
    listed = subprocess.run(
        [str(MACHINE_BIN), "training", "list", "--workspace", str(root)], capture_output=True, text=True,
        env=clean_env(), timeout=BEGUN_WITHIN_S, check=True,
    )  # fmt: skip
    assert f"{steps}/320 steps  stopped after step {steps}" in listed.stdout

    resumed = subprocess.run(
        [str(MACHINE_BIN), *map(str, args), "--resume", folder.name], capture_output=True, text=True,
        env=clean_env(SHORT), timeout=FINISHED_WITHIN_S, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming at step {steps + 1} of 320" in resumed.stderr
    assert f"  step {steps + 1} (epoch " in resumed.stderr, resumed.stderr[:3000]
    assert f"  step {steps} (" not in resumed.stderr, resumed.stderr[:3000]
    assert f"resumed at step {steps + 1} of 320" in resumed.stdout  # the report says it too
    record = json.loads((folder / "record.json").read_text())
    assert (record["status"], record["steps"]) == ("trained", 320)
    logged = [json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, 321))
