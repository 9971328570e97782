"""Suites on a real Ray cluster (a head and two workers started by ``ray start`` on loopback): runs spread
over both workers, each made in a sandbox of its worker's own, and return to be graded, charged and stored
here, with the same results as the local executor; a worker killed mid-suite loses nothing (its runs are
tried once more on the other); the one budget holds across the workers; ``--resume`` finishes a suite the
Ray executor began; a cluster that cannot be reached is said in words."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env, on_ci
from helpers.openai_server import FakeOpenAI, text

from machine import open_workspace, run_suite
from machine.errors import BadInputError
from machine.ops import executor_for

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason="ray is not installed (the dev extra)")

from helpers.ray_cluster import Cluster, cluster  # noqa: E402

RED = REPO / "machines" / "red"
Done = subprocess.CompletedProcess[str]
SCRIPT = RED / "script.json"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    try:
        with cluster(workers=2) as running:
            yield running
    except RuntimeError as error:  # pragma: no cover - the cluster itself would not start
        if on_ci():
            raise
        pytest.skip(f"a Ray cluster cannot start here: {error}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(RED, tmp_path / "machines" / "red")
    return tmp_path


def machine_cmd(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MACHINE_BIN), *args, "--workspace", str(root)],
        capture_output=True, text=True, timeout=300, env=clean_env(env),
    )  # fmt: skip


def scores(report: dict[str, Any]) -> dict[str, list[float]]:
    return {case["id"]: sorted(case["scores"]) for case in report["cases"]}


def test_a_suite_on_the_cluster_equals_the_local_one(ray_cluster: Cluster, root: Path) -> None:
    common = ["suite", "red", "--harness", "scripted", "--script", str(SCRIPT), "--trials", "2", "--json"]
    local = machine_cmd(root, *common)
    remote = machine_cmd(root, *common, "--executor", "ray", "--ray-address", ray_cluster.address)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert there["summary"]["runs"] == here["summary"]["runs"] == 34
    assert there["summary"]["mean"] == here["summary"]["mean"] == 1.0
    assert scores(there) == scores(here)
    runs = [r for r in open_workspace(root).store.iter_runs("red") if r.suite_id == there["suite_id"]]
    assert len(runs) == 34 and all(r.scorecard is not None and r.harness == "scripted" for r in runs)
    assert all(r.trajectory[1].tool_calls for r in runs if r.case and r.case.get("red"))  # tools ran there


def test_runs_spread_over_both_workers_and_a_killed_worker_loses_nothing(
    ray_cluster: Cluster, root: Path
) -> None:
    slow = {"rules": [{"match": ".", "turns": [{"text": "ok", "delay": 0.3}]}]}
    (root / "slow.json").write_text(json.dumps(slow))
    ws = open_workspace(root, harness="scripted", script=root / "slow.json")
    spec = ws.load("red")
    cases = ws.cases("red")
    script = str(root / "slow.json")
    executor = executor_for(
        ws, "ray", address=ray_cluster.address, concurrency=4, harness="scripted", script=script
    )
    assert executor is not None
    finished: list[str] = []
    try:
        where = [ray.get(actor.where.remote()) for actor in executor.actors]  # type: ignore[attr-defined]
        assert len({w["node"] for w in where}) == 2  # a runner on each worker
        victim = where[0]

        def kill_when_started(run: Any) -> None:
            finished.append(run.id)
            if len(finished) == 3:
                os.kill(victim["pid"], signal.SIGKILL)  # the worker process dies with runs in flight

        report = anyio.run(
            lambda: run_suite(
                ws, spec, cases, trials=2, concurrency=4, executor=executor, on_run=kill_when_started
            )
        )
    finally:
        executor.close()
    assert report.runs == 34 and report.errors == 0  # each run lost with the worker was made again
    stored = [r for r in ws.store.iter_runs("red") if r.suite_id == report.suite_id]
    assert sorted((r.case_id, r.trial) for r in stored) == sorted((c.id, t) for t in range(2) for c in cases)


def test_the_budget_holds_across_the_workers(ray_cluster: Cluster, root: Path) -> None:
    """Each run costs the same at the pricing table's rate; the suite stops once the budget is spent, over
    it by no more than the runs in flight."""
    reply = text("no red here", prompt_tokens=2_000, completion_tokens=1_000)  # $0.0093 at Qwen3.8-27B
    with FakeOpenAI(default=reply, latency_ms=200) as fake:
        done = machine_cmd(
            root, "suite", "red", "--harness", "openai", "--base-url", fake.url + "/v1",
            "--executor", "ray", "--ray-address", ray_cluster.address, "--concurrency", "4",
            "--budget", "0.03", "--json",
        )  # fmt: skip
        calls = len(fake.requests)
    report = json.loads(done.stdout)
    assert 0 < report["summary"]["runs"] < 17, (report, done.stderr)  # stopped before every case ran
    assert report["stopped"] and "budget" in report["stopped"]
    per_run = 2_000 * 1.86e-6 + 1_000 * 5.595e-6
    assert report["cost_usd"] == pytest.approx(calls * per_run)  # every call the workers made, charged here
    assert report["cost_usd"] <= 0.03 + 4 * per_run  # over the budget by the runs in flight at most


def test_resume_finishes_a_suite_the_cluster_began(ray_cluster: Cluster, root: Path) -> None:
    common = ["suite", "red", "--harness", "scripted", "--script", str(SCRIPT), "--json"]
    first = machine_cmd(root, *common, "--executor", "ray", "--ray-address", ray_cluster.address)
    suite_id = json.loads(first.stdout)["suite_id"]
    ws = open_workspace(root)
    dropped = [r for r in ws.store.iter_runs("red") if r.suite_id == suite_id][:5]
    _forget(root, [r.id for r in dropped])
    remote = ["--executor", "ray", "--ray-address", ray_cluster.address]
    again = machine_cmd(root, *common, "--resume", suite_id, *remote)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["resumed"], report["summary"]["runs"]) == (12, 17)


def _forget(root: Path, run_ids: list[str]) -> None:
    import sqlite3

    with sqlite3.connect(root / ".machine" / "store.db") as db:
        db.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in run_ids])


def test_a_cluster_that_cannot_be_reached_is_said_in_words(root: Path) -> None:
    ws = open_workspace(root, harness="scripted", script=SCRIPT)
    started = time.monotonic()
    with pytest.raises(BadInputError, match=r"cannot reach the Ray cluster at 127\.0\.0\.2:1"):
        executor_for(ws, "ray", address="127.0.0.2:1", harness="scripted", script=str(SCRIPT))
    assert time.monotonic() - started < 120


def test_the_shipped_folder_holds_the_machines_and_the_script(root: Path, tmp_path: Path) -> None:
    from machine.ops._ray_executor import RayExecutor

    (root / "machines" / "red" / "__pycache__").mkdir()
    outside = tmp_path / "elsewhere"
    (outside / "red").mkdir(parents=True)
    (outside / "red" / "script.json").write_text("{}")
    for script, shipped_as in (
        (str(root / "machines" / "red" / "script.json"), "machines/red/script.json"),
        (str(SCRIPT), ".scripts/script.json"),
        (str(outside), ".scripts/elsewhere"),
    ):
        executor = RayExecutor(root, script=script)
        folder = executor._ship()
        try:
            assert executor._script() == shipped_as
            assert (folder / shipped_as).exists() and (folder / "machines" / "red" / "machine.py").is_file()
            assert not (folder / "machines" / "red" / "__pycache__").exists()
        finally:
            shutil.rmtree(folder)
