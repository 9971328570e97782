"""One Ctrl-C stops a command working on a local model (a tiny one made here) with exit status 130 and a
line saying what was kept, while the model's generator thread is still inside torch: the interpreter's
teardown under such a thread aborted the process with status 134 instead. A training stopped before its
first step leaves a record ``--resume`` goes on from."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.stopping import NOISE, STOP_S, WAIT_S, Started, start
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.clients import _local_models  # noqa: E402

LONG = {"MACHINE_LOCAL_MAX_TOKENS": "400"}
"""Replies long enough that a Ctrl-C lands while the model is generating one."""
BUNDLED_WAIT_S = 300.0
"""Loading SmolLM2 and writing its first reply, on two busy cores (over a minute under the whole suite)."""
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


def wait_for(started: Started, text: str, *, out: bool = False, within: float = WAIT_S) -> None:
    """Poll the command's stderr (or stdout), for at most ``within`` seconds, until it says ``text``."""
    deadline = time.monotonic() + within
    while text not in (started.out if out else started.err).read_text():
        assert started.process.poll() is None, ("ended early", started.err.read_text())
        assert time.monotonic() < deadline, (f"never said {text!r}", started.err.read_text())
        time.sleep(0.02)


def stopped_cleanly(started: Started) -> str:
    status, took, _out, err = started.stopped()
    assert status == 130, err
    assert took < STOP_S * 3, took
    assert not any(noise in err for noise in (*NOISE, *ABORTED)), err
    return err


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
    wait_for(started, "[1/", out=True, within=BUNDLED_WAIT_S)
    assert "interrupted: suite " in stopped_cleanly(started)


def test_ctrl_c_while_the_gate_is_fixed_leaves_a_record_resume_finishes(root: Path, tmp_path: Path) -> None:
    script = REPO / "machines" / "signoff" / "script.json"
    teacher = [
        "suite", "signoff", "--harness", "scripted", "--script", script, "--model", "teacher",
        "--budget", "none", "--workspace", root,
    ]  # fmt: skip
    taught = subprocess.run(
        [str(MACHINE_BIN), *map(str, teacher)], capture_output=True, text=True, env=clean_env(),
        timeout=WAIT_S, check=False,
    )  # fmt: skip
    assert taught.returncode == 0, taught.stderr
    args = ["train", "signoff", "--any-model", "--trials", "1", "--budget", "none", "--workspace", root]
    started = start(tmp_path, *args, env=LONG)
    wait_for(started, "fixing the gate before training")
    err = stopped_cleanly(started)
    [record] = (root / ".machine" / "training").iterdir()
    assert json.loads((record / "record.json").read_text())["status"] == "stopped"
    assert f"resume it: train signoff with resume {record.name}" in err
    resumed = subprocess.run(
        [str(MACHINE_BIN), *map(str, args), "--resume", record.name],
        capture_output=True, text=True, env=clean_env({"MACHINE_LOCAL_MAX_TOKENS": "4"}),
        timeout=WAIT_S * 3, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"training record {record.name}" in resumed.stderr
    assert json.loads((record / "record.json").read_text())["status"] == "trained"
