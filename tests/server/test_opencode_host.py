"""The real opencode binary as the host of ``machine serve``: ``opencode run`` with a model served by a local
scripted OpenAI-compatible endpoint, and ``machine serve`` as its local MCP server, exactly as the
configuration docs/hosts.md gives. The model calls ``machine_specialize`` (the author scripted) and then
``machine_train`` (the local trainer on a tiny model made here); both go through and write what they
say. Loopback only; every wait is bounded."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, REPO
from helpers.hosts import host_binary
from helpers.learn_server import author_script
from helpers.openai_server import FakeOpenAI, Recorded, Reply, text, tool_call
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine import open_workspace, run_suite  # noqa: E402
from machine.clients.hosts._programs import host_environment  # noqa: E402
from machine.clients.hosts.opencode._server import SWITCHES  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.server]  # opencode, from npm
SPECIALIZE = {"parent": "red", "focus": "noting red", "slug": "noted", "cases": 4, "budget_usd": 1}
SPECIALIZE |= {"harness": "scripted"}
TRAIN = {"name": "red", "budget_usd": 1, "any_model": True, "trials": 1, "epochs": 1, "batch_size": 4}
TRAIN |= {"force": True}


def respond(request: Recorded) -> Reply:
    """The host's model: specialize, then train, then a closing line; any other request (a title) gets
    a line of text."""
    if not any("machine_train" in json.dumps(t) for t in (request.body or {}).get("tools", [])):
        return text("Improving red")
    done = [m for m in request.messages if m.get("role") == "tool"]
    if not done:
        return tool_call("machine_specialize", SPECIALIZE)
    if len(done) == 1:
        return tool_call("machine_train", TRAIN)
    return text("Specialized red and trained it.")


def workspace(root: Path, model: Path) -> Path:
    shutil.copytree(REPO / "machines" / "red", root / "machines" / "red")
    (root / "machines" / "red" / "model.json").write_text(json.dumps({"model": f"local:{model}"}))
    teacher = open_workspace(root, harness="scripted", script=REPO / "machines" / "red" / "script.json")
    spec = teacher.load("red")
    anyio.run(lambda: run_suite(teacher, spec, teacher.cases("red"), trials=1, model="teacher"))
    return author_script(root / "author.json")


def opencode_config(endpoint: str, root: Path, script: Path) -> dict[str, Any]:
    """opencode's configuration: the scripted endpoint as its provider, machine serve as a local server."""
    served = [str(MACHINE_BIN), "serve", "--workspace", str(root), "--script", str(script)]
    model = {"name": "teacher", "tool_call": True}
    return {
        "$schema": "https://opencode.ai/config.json",
        "share": "disabled",
        "autoupdate": False,
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "fake",
                "options": {"baseURL": f"{endpoint}/v1", "apiKey": "none"},
                "models": {"teacher": model},
            }
        },
        "mcp": {
            "machine": {
                "type": "local",
                "enabled": True,
                "command": served,
                "environment": {"MACHINE_ALLOW_SPEND_USD": "5", "MACHINE_LOCAL_MAX_TOKENS": "4"},
            }
        },
    }


def test_opencode_calls_specialize_and_train_on_machine_serve(tmp_path: Path) -> None:
    opencode = host_binary("opencode")
    model = tiny_model_folder(tmp_path / "tiny")
    root = tmp_path / "ws"
    script = workspace(root, model)
    with FakeOpenAI(responder=respond) as fake:
        home = tmp_path / "home"
        home.mkdir()
        config = json.dumps(opencode_config(fake.url, root, script))
        env = host_environment(None, home, {"OPENCODE_CONFIG_CONTENT": config})
        env |= {switch: "1" for switch in SWITCHES}
        asked = "Specialize red, then train it."
        done = subprocess.run(
            [str(opencode), "run", "--format", "json", "--model", "fake/teacher", asked],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=420,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    used = [e for e in events if e.get("type") == "tool_use"]
    states = {e["part"]["tool"]: e["part"]["state"] for e in used}
    assert set(states) == {"machine_specialize", "machine_train"}, done.stdout[-3000:]
    assert all(s["status"] == "completed" for s in states.values()), states
    specialized = json.loads(states["machine_specialize"]["output"])
    assert (
        specialized["child"] == "red/noted" and (root / "machines" / "red" / "noted" / "machine.py").is_file()
    )
    trained = json.loads(states["machine_train"]["output"])
    assert trained["candidate"] == "v2" and trained["training"]["trainer"] == "local"
    assert trained["consent"]["how"] == "allowance"
    logged = [json.loads(line) for line in (root / ".machine" / "spending.jsonl").read_text().splitlines()]
    assert {line["tool"] for line in logged} >= {"specialize", "train"}
