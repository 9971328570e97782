"""The real ``machine`` command says, before its first model call, that the gate cannot pass on the
held-out cases it has: a local OpenAI-compatible endpoint reads the command's stderr (a file, written a
line at a time) at every request, so what had been said when the first call arrived is known exactly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.env import MACHINE_BIN, clean_env
from helpers.openai_server import FakeOpenAI, Recorded, Reply, text
from helpers.training import HELD_OUT, make_caps

TIMEOUT = 120
CANDIDATE = "Qwen/Qwen3.8-27B"
WARNING = (
    "warning: no candidate can pass the gate: holdout.json holds only 4 held-out cases, and at min_z 2 "
    "the gate's exact sign test needs at least 6 cases that change"
)


def test_propose_says_the_gate_cannot_pass_before_its_first_model_call(tmp_path: Path) -> None:
    make_caps(tmp_path, holdout=HELD_OUT[:4])
    err = tmp_path / "stderr.txt"
    said_by_then: list[str] = []

    def answer(request: Recorded) -> Reply:
        said_by_then.append(err.read_text(encoding="utf-8"))
        body = request.body or {}
        prompt = str(body.get("messages", [{}])[-1].get("content", ""))
        better = body.get("model") == CANDIDATE  # the live model gets every held-out case wrong
        return text(prompt.upper() if better else "no idea", prompt_tokens=10, completion_tokens=2)

    with FakeOpenAI(responder=answer) as server, err.open("w", encoding="utf-8") as sink:
        done = subprocess.run(
            [
                str(MACHINE_BIN), "propose", "caps", "--model", CANDIDATE, "--trials", "1",
                "--harness", "openai", "--base-url", server.url + "/v1", "--budget", "1",
                "--workspace", str(tmp_path),
            ],
            stdout=subprocess.PIPE, stderr=sink, text=True, env=clean_env(), timeout=TIMEOUT, check=False,
        )  # fmt: skip
    said = err.read_text(encoding="utf-8")
    assert done.returncode == 0, said
    assert len(said_by_then) == 8  # one run of each of the 4 held-out cases on each side
    first = said_by_then[0].splitlines()
    assert first[0].startswith("plan: propose 'caps'") and first[1].startswith(WARNING)
    assert "add at least 2 more held-out cases to holdout.json first" in first[1]
    versions = json.loads((tmp_path / "machines" / "caps" / "versions.json").read_text(encoding="utf-8"))
    report = versions["versions"][-1]["report"]
    assert (report["up"], report["down"]) == (4, 0)  # better on every held-out case, and yet
    assert report["outcome"] == "not enough evidence"  # refused, as it was told before the first call
