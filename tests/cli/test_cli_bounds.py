"""A model that keeps calling a tool with a 6 MB name, through a real OpenAI-compatible endpoint on
loopback and the real ``machine suite``: the runs are stored, the event log written and a dashboard page
read, and none of them grows with what the model sent."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.openai_server import FakeOpenAI, tool_call

from machine import open_workspace
from machine.runs import EVENTS_FILE, MAX_TOOL_NAME

HUGE_NAME = "n" * 6_000_000


@pytest.mark.slow
def test_a_six_megabyte_tool_name_leaves_the_store_the_log_and_a_page_small(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(REPO / "machines" / "red", root / "machines" / "red")
    cases = json.loads((root / "machines" / "red" / "cases.json").read_text())[:3]
    (root / "three.json").write_text(json.dumps(cases), encoding="utf-8")
    reply = tool_call(
        HUGE_NAME, {"x": "y" * 200_000}, id="i" * 1_000_000, prompt_tokens=10, completion_tokens=10
    )
    with FakeOpenAI(default=reply) as endpoint:
        env = clean_env({"OPENAI_BASE_URL": endpoint.url + "/v1", "OPENAI_API_KEY": "k"})
        done = subprocess.run(
            [str(MACHINE_BIN), "suite", "red", "--cases", str(root / "three.json"), "--harness", "openai",
             "--workspace", str(root), "--concurrency", "1"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        asked = len(endpoint.requests)
    assert done.returncode in (0, 1), done.stderr  # the runs fail their check; the command works
    assert asked == 9  # 3 runs x red's 3 steps: the model saw each refusal and tried again
    ws = open_workspace(root)
    runs = list(ws.store.iter_runs("red"))
    assert len(runs) == 3
    for run in runs:
        for message in run.trajectory:
            for call in message.tool_calls:
                assert len(call.name) < MAX_TOOL_NAME + 30 and len(call.id) < 40
                assert call.raw_arguments is not None and len(call.raw_arguments) < 100
            if message.role == "tool":
                assert message.is_error and len(message.content) < 300
    assert (root / ".machine" / "store.db").stat().st_size < 2_000_000
    log = root / ".machine" / EVENTS_FILE
    assert log.stat().st_size < 100_000
    assert max(len(line) for line in log.read_bytes().splitlines()) < 2_000
    from machine.dashboard._api import Api  # here: the dashboard imports starlette, slow for a collection

    page = Api(ws, None).runs({"machine": "red"})  # type: ignore[arg-type]  # no follower needed
    assert len(page["runs"]) == 3 and len(json.dumps(page)) < 10_000
