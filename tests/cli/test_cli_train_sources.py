"""``machine train --any-model`` on runs of several sources: at a terminal it asks which to learn from (a
number, or ``a`` for all); without one it refuses, naming each source. Run through the real console script
on a pseudo-terminal, with a dry run on a tiny local model (nothing is spent or written)."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.clients.local import _models as _local_models  # noqa: E402

WAIT_S = 60.0


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """signoff on a tiny model, with every case answered well by two scripted models."""
    base = tmp_path_factory.mktemp("sources")
    tiny = tiny_model_folder(base / "model")
    folder = base / "ws" / "machines" / "signoff"
    shutil.copytree(REPO / "machines" / "signoff", folder)
    (folder / "model.json").write_text(json.dumps({"model": f"local:{tiny}"}), encoding="utf-8")
    script = REPO / "machines" / "signoff" / "script.json"
    for model in ("teacher", "tutor"):
        args = ["suite", "signoff", "--harness", "scripted", "--script", script, "--model", model]
        taught = subprocess.run(
            [str(MACHINE_BIN), *map(str, args), "--budget", "none", "--workspace", str(base / "ws")],
            capture_output=True, text=True, env=clean_env(), timeout=WAIT_S, check=False,
        )  # fmt: skip
        assert taught.returncode == 0, taught.stderr
    yield base / "ws"
    _local_models.forget()


DRY = ["train", "signoff", "--any-model", "--best-of", "2", "--dry-run"]


def on_a_terminal(root: Path, answer: str) -> tuple[int, str]:
    """The dry run with stdin and stderr on a pseudo-terminal, ``answer`` typed once it asks."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(MACHINE_BIN), *DRY, "--workspace", str(root)],
        stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=clean_env(),
    )  # fmt: skip
    os.close(follower)
    said, deadline = b"", time.monotonic() + WAIT_S
    try:
        while b"learn from:" not in said:
            assert time.monotonic() < deadline and process.poll() is None, said.decode(errors="replace")
            if select.select([leader], [], [], 0.1)[0]:
                said += os.read(leader, 4096)
        os.write(leader, answer.encode() + b"\n")
        out, _ = process.communicate(timeout=WAIT_S)
        while select.select([leader], [], [], 0.1)[0]:  # what it wrote on stderr after the answer
            try:
                said += os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: all of it read
                break
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    return process.returncode, said.decode(errors="replace") + out.decode()


@pytest.mark.slow
@pytest.mark.parametrize(("answer", "examples"), [("1", 16), ("a", 32)])
def test_at_a_terminal_train_asks_which_source_to_learn_from(root: Path, answer: str, examples: int) -> None:
    status, said = on_a_terminal(root, answer)
    assert status == 0, said
    assert "the runs selected come from 2 sources:" in said
    assert "  1. 16 runs of " in said and "  a. all of them" in said
    assert f"  data: {examples} examples" in said


def test_no_answer_at_a_terminal_refuses_naming_the_sources(root: Path) -> None:
    status, said = on_a_terminal(root, "")
    assert status == 2, said
    assert "come from 2 sources (16 of " in said and "--from-model" in said


def test_a_script_is_refused_without_being_asked(root: Path) -> None:
    done = subprocess.run(
        [str(MACHINE_BIN), *DRY, "--workspace", str(root)], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, env=clean_env(), timeout=WAIT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "learn from:" not in done.stderr, done.stderr
    assert "come from 2 sources (16 of " in done.stderr
