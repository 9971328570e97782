"""``machine serve`` with a store it cannot open (``MACHINE_STORE`` at an unused loopback port, its
password in each form libpq reads): the tool answers one sentence naming the store with its password
masked, and stderr holds that sentence once and no traceback. Spoken over real stdio, line by line."""

from __future__ import annotations

import json
import select
import subprocess
from typing import Any

import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.server_workspace import Folder

SECRET = "hunter-22"
LIMIT_S = 60


def _line(message: dict[str, object]) -> str:
    return json.dumps(message) + "\n"


def _answer(server: subprocess.Popen[str]) -> dict[str, Any]:
    """The server's next message, waiting at most ``LIMIT_S``."""
    assert server.stdout is not None
    ready, _, _ = select.select([server.stdout], [], [], LIMIT_S)
    assert ready, f"no answer from machine serve within {LIMIT_S} s"
    return dict(json.loads(server.stdout.readline()))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("location", "shown"),
    [
        (f"postgresql://bob:{SECRET}@127.0.0.1:1/runs", "postgresql://bob:***@127.0.0.1:1/runs"),
        (
            f"postgresql://bob@127.0.0.1:1/runs?password={SECRET}",
            "postgresql://bob@127.0.0.1:1/runs?password=***",
        ),
        (
            rf"host=127.0.0.1 port=1 user=bob password='{SECRET} x\'y' dbname=runs",
            "host=127.0.0.1 port=1 user=bob password=*** dbname=runs",
        ),
    ],
)
def test_a_store_that_cannot_be_opened_is_one_masked_sentence_not_a_traceback(
    folder: Folder, location: str, shown: str
) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    calls = [
        _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
        _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        _line(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "recent_runs", "arguments": {"name": "red"}},
            }
        ),
    ]
    server = subprocess.Popen(
        [str(MACHINE_BIN), "serve", "--workspace", str(folder.root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=clean_env({"MACHINE_STORE": location}), cwd=folder.root,
    )  # fmt: skip
    try:
        assert server.stdin is not None
        server.stdin.write("".join(calls))
        server.stdin.flush()
        answers = [_answer(server), _answer(server)]
        _, stderr = server.communicate(timeout=LIMIT_S)
    finally:
        server.kill()
    result = answers[1]["result"]
    [said] = [item["text"] for item in result["content"]]
    assert result["isError"] and said.startswith(f"the store {shown} cannot be used (")
    assert said.endswith(
        "check that the server is running and reachable and that its URL or settings name a "
        "database this user may write"
    )
    assert "Traceback" not in stderr and said in stderr and len(stderr.strip().splitlines()) == 1
    assert SECRET not in said + stderr + json.dumps(answers)
