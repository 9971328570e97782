"""``demo/mcp_tour.py`` (the MCP half of ``make demo``) as ``make demo`` runs it: a real process that starts
``machine serve`` over stdio and drives it with the SDK client, here against a copy of the repository's
machines in a temporary workspace, so the repository's own ``.machine/`` is never written; its learning
half specializes dev and trains signoff's local model on copies in a scratch workspace."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env

from machine import open_workspace

pytestmark = pytest.mark.slow
TOUR = REPO / "demo" / "mcp_tour.py"


def test_the_mcp_tour_drives_machine_serve_and_stores_the_runs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(REPO / "machines", root / "machines", ignore=shutil.ignore_patterns("__pycache__"))
    repo_data = REPO / ".machine"
    before = sorted(p.name for p in repo_data.iterdir()) if repo_data.is_dir() else None
    stamp = (repo_data / "store.db").stat().st_mtime_ns if (repo_data / "store.db").exists() else None

    done = subprocess.run(
        [
            sys.executable,
            str(TOUR),
            "--workspace",
            str(root),
            "--machine",
            str(MACHINE_BIN),
            "--timeout",
            "600",
        ],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=620,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    steps = ["tools/list", "== list_machines", "== show_machine red", "== rehearse red", "== recent_runs red"]
    positions = [out.index(step) for step in steps]
    assert positions == sorted(positions), out
    for tool in (
        "list_machines",
        "show_machine",
        "recent_runs",
        "rehearse",
        "specialize",
        "commit",
        "revert",
    ):
        assert f"  {tool}(" in out
    assert "calls_when_red" in out  # show_machine's criterion
    assert "progress 17/17" in out and "17 progress notifications received" in out  # one per run
    assert "17 runs" in out and "consent: allowance" in out
    assert "isError:" in out and "MACHINE_ALLOW_SPEND_USD" in out  # the refusal past the allowance
    assert "specialize wrote dev/edge: machines/dev/edge/" in out  # the learning tools, on copies
    assert "training step 1 (epoch 1): loss" in out and "candidate v2" in out
    assert not (root / "machines" / "dev" / "edge").exists()  # they wrote in the scratch workspace

    stored = open_workspace(root).store.runs("red", limit=100)
    assert len(stored) == 17
    assert {run.harness for run in stored} == {"scripted"}
    for run in stored[:5]:
        assert run.id in out  # recent_runs printed the newest
    logged = [json.loads(line) for line in (root / ".machine" / "spending.jsonl").read_text().splitlines()]
    assert [entry["tool"] for entry in logged] == ["rehearse"]
    assert logged[0]["correlation_id"] in out

    after = sorted(p.name for p in repo_data.iterdir()) if repo_data.is_dir() else None
    assert after == before
    if stamp is not None:
        assert (repo_data / "store.db").stat().st_mtime_ns == stamp


def test_the_mcp_tour_refuses_a_workspace_without_red(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(TOUR), "--workspace", str(tmp_path)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "machines/red/script.json" in done.stderr
