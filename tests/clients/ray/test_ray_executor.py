"""Runs on a real Ray cluster (a head and two workers started by ``ray start`` on loopback): a suite's runs
spread over both workers, each made in a sandbox of its worker's own, and return to be graded, charged and
stored here, with the same results as the local executor; a worker killed mid-suite loses nothing (its runs
are tried once more on the other); the one budget holds across the workers; ``--resume`` finishes a suite
the Ray executor began; a comparison, an optimization and a training make their runs there too, with the
earlier version's files and each proposal's instructions; a cluster that cannot be reached is said in
words."""

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
from click.testing import CliRunner
from helpers.env import MACHINE_BIN, REPO, clean_env, installed_or_skip, on_ci
from helpers.git import git
from helpers.openai_server import FakeOpenAI, text
from helpers.training import BASE, HELD_OUT, TRAIN_CASES, Counting, make_caps
from helpers.when import PROPOSAL, Folder

from machine import open_workspace, run_suite
from machine.clients import TRAINERS, TrainerEntry
from machine.errors import BadInputError
from machine.ops import executor_for
from machine.runs import Run
from machine.spec import TRUST_FILE, TrustBook, marked
from machine.workspace import RunOrder

pytestmark = [pytest.mark.slow, pytest.mark.server]  # a Ray cluster
installed_or_skip("ray", reason="ray is not installed (the dev extra)")  # imported where used: it is slow

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
    return {case["case_id"]: sorted(case["scores"]) for case in report["cases"]}


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


def test_conversations_are_held_here_and_their_turns_made_on_the_cluster(
    ray_cluster: Cluster, root: Path
) -> None:
    for name in ("chatbot", "persona"):
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    script = str(REPO / "machines" / "chatbot" / "script.json")
    common = ["suite", "chatbot", "--harness", "scripted", "--script", script, "--json"]
    local = machine_cmd(root, *common)
    remote = machine_cmd(root, *common, "--executor", "ray", "--ray-address", ray_cluster.address)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert scores(there) == scores(here) and there["summary"]["runs"] == here["summary"]["runs"] > 0
    turns = [r for r in open_workspace(root).store.iter_runs() if r.suite_id == there["suite_id"]]
    assert {r.machine for r in turns} == {"chatbot", "persona"}  # both sides' turns, stored here
    assert any(len(r.history) >= 2 for r in turns)  # later turns were made with the conversation so far


def test_runs_spread_over_both_workers_and_a_killed_worker_loses_nothing(
    ray_cluster: Cluster, root: Path
) -> None:
    import ray

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
                ws.using(executor=executor), spec, cases, trials=2, concurrency=4, on_run=kill_when_started
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


def test_a_comparison_on_the_cluster_ships_the_earlier_version_and_equals_the_local_one(
    ray_cluster: Cluster, root: Path
) -> None:
    """A (HEAD) has a tool that answers differently, so its runs show which files made them; B's
    instructions make the script call the tool on every message, so B scores lower on the cases without
    red."""
    machine_py = root / "machines" / "red" / "machine.py"
    now = machine_py.read_text()
    machine_py.write_text(now.replace('"noted: red was mentioned"', '"noted at HEAD"'))
    (root / ".gitignore").write_text(".machine/\n__pycache__/\nscript.json\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "red")
    machine_py.write_text(now)
    instructions = root / "machines" / "red" / "instructions.md"
    instructions.write_text(instructions.read_text() + "\nCall red_mentioned on every message.\n")
    script = json.loads(SCRIPT.read_text())
    always = {"tool_calls": [{"name": "red_mentioned", "arguments": {}}]}
    script["rules"].insert(
        0, {"match": ".", "instructions": "on every message", "turns": [always, {"text": "ok"}]}
    )
    (root / "script.json").write_text(json.dumps(script))
    common = ["compare", "red", "--harness", "scripted", "--script", str(root / "script.json"), "--json"]
    local = machine_cmd(root, *common)
    remote = machine_cmd(root, *common, "--executor", "ray", "--ray-address", ray_cluster.address)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    here, there = json.loads(local.stdout), json.loads(remote.stdout)
    assert there["diff"] == here["diff"] < 0 and there["se"] == here["se"] and there["cases"] == 17
    assert there["a"]["mean"] == here["a"]["mean"] == 1.0 and there["b"]["mean"] == here["b"]["mean"]
    runs = list(open_workspace(root).store.iter_runs("red"))
    at_head = [r for r in runs if r.revision == there["commit"] and r.case and r.case.get("red")]
    with_red = [c for c in json.loads((RED / "cases.json").read_text()) if c.get("red")]
    assert len(at_head) == 2 * len(with_red)  # both comparisons' runs of A on the cases with red
    assert all(any("noted at HEAD" in (m.content or "") for m in r.trajectory) for r in at_head)


QUIET = """\
from machine import check, define_child, define_evaluator, define_rubric

from ..machine import machine as parent

rubric = define_rubric({"said": "It answered."})
machine = define_child(
    parent, name="red/quiet", intent="Answer quietly.", instructions="Answer in small letters.",
    rubric=rubric, evaluator=define_evaluator(rubric, {"said": check("said", lambda run: bool(run.output))}),
)
"""


def model_written_child(root: Path, *, trusted: bool) -> Path:
    """red/quiet, written by a model as specialize writes a child (marked and recorded), and trusted by
    the person when ``trusted``."""
    book = TrustBook(root / ".machine" / TRUST_FILE, root / "machines")
    path = root / "machines" / "red" / "quiet" / "machine.py"
    text = marked(QUIET, "specialize red (author test/model)", "red/quiet")
    book.record("red/quiet", {path: text}, by="specialize red (author test/model)")
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    if trusted:
        book.trust("red/quiet")
    return path


def test_a_trusted_child_runs_on_the_cluster(ray_cluster: Cluster, root: Path) -> None:
    model_written_child(root, trusted=True)
    shutil.copy(RED / "cases.json", root / "machines" / "red" / "quiet" / "cases.json")
    common = ["suite", "red/quiet", "--harness", "echo", "--json", "--executor", "ray"]
    done = machine_cmd(root, *common, "--ray-address", ray_cluster.address)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["runs"] == 17 and "Traceback" not in done.stderr


async def test_a_worker_refuses_a_model_written_file_that_differs_from_what_was_trusted(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner itself, without a cluster: given the caller's record, it loads the child whose file
    is what was trusted, and refuses, in words, one whose shipped file differs (failing closed)."""
    from machine.clients.ray._runner import REFUSED, Runner

    path = model_written_child(root, trusted=True)
    trusted = (root / ".machine" / TRUST_FILE).read_bytes()
    monkeypatch.chdir(root)  # a runner's working directory is the shipped folder
    order = RunOrder(
        run=Run(
            machine="red/quiet",
            model="m",
            harness="echo",
            instructions="Answer in small letters.",
            input="hi",
        )
    )
    made = Run.model_validate_json(await Runner("echo", None, None, trusted).run(order.model_dump_json()))
    assert made.status == "ok" and made.output
    path.write_text(path.read_text() + "\nimport os\n", encoding="utf-8")  # not what the person trusted
    answer = await Runner("echo", None, None, trusted).run(order.model_dump_json())
    assert answer.startswith(REFUSED) and "holds code a model wrote that you have not trusted" in answer
    assert "changed since it was trusted" in answer
    unshipped = await Runner("echo", None, None, None).run(order.model_dump_json())  # no record at all
    assert unshipped.startswith(REFUSED)


def test_optimize_on_the_cluster_measures_each_proposal_there(ray_cluster: Cluster, tmp_path: Path) -> None:
    """Each proposal's instructions go with its runs: the workers answer in the form only the proposal
    asks for, so it is kept exactly as it is when made here (tests/cli/test_cli_optimize.py)."""
    ws = Folder(tmp_path / "ws", lambda *args: machine_cmd(tmp_path / "ws", *map(str, args)))
    remote = ["--executor", "ray", "--ray-address", ray_cluster.address]
    out = ws.optimize(*remote).stdout
    figures = "mean 1.000 (live 0.143), gain +0.857, SE 0.143, z 6.00, sign test p 0.0156 over 7 cases\n"
    assert f"      cases: {figures}" in out and f"      held-out: {figures}" in out
    assert "kept: r1.p1, written to instructions.md as pending candidate v2\n" in out
    assert ws.instructions.strip() == PROPOSAL


def test_a_training_samples_and_is_gated_on_the_cluster(
    ray_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trainer works here; the runs it samples and the gate's runs of the live version and of the
    candidate's checkpoint are made on the workers and stored here."""
    from machine.cli import cli
    from machine.clients.ray._executor import RayExecutor

    root = tmp_path / "ws"
    make_caps(root)
    rules = [{"match": f"^{c['input']}$", "turns": [{"text": c["input"].upper()}]} for c in TRAIN_CASES]
    (root / "script.json").write_text(
        json.dumps({"rules": [*rules, {"match": ".", "turns": [{"text": "?"}]}]})
    )
    trainer = Counting()
    monkeypatch.setitem(TRAINERS, "counting", TrainerEntry(lambda _request: trainer))
    sent: list[str] = []
    made_there = RayExecutor.run

    async def counted(self: RayExecutor, order: RunOrder) -> Any:
        sent.append(order.run.model)
        return await made_there(self, order)

    monkeypatch.setattr(RayExecutor, "run", counted)
    args = [
        "train", "caps", "--trainer", "counting", "--any-model", "--samples", "1", "--trials", "1", "--json",
        "--harness", "scripted", "--script", str(root / "script.json"), "--workspace", str(root),
        "--executor", "ray", "--ray-address", ray_cluster.address,
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [record] = (root / ".machine" / "training").iterdir()
    candidate = json.loads(result.stdout)
    assert candidate["model"] == f"good:{record.name}:{trainer.steps[-1]}"
    held_out = len(HELD_OUT)
    assert sent.count(BASE) == len(TRAIN_CASES) + held_out  # sampled, then the live version gated
    assert sent.count(candidate["model"]) == held_out  # the candidate's checkpoint, on the workers
    stored = list(open_workspace(root).store.iter_runs("caps"))
    assert len(stored) == len(sent) and all(r.scorecard is not None for r in stored)


def test_a_cluster_that_cannot_be_reached_is_said_in_words(root: Path) -> None:
    ws = open_workspace(root, harness="scripted", script=SCRIPT)
    started = time.monotonic()
    with pytest.raises(BadInputError, match=r"cannot reach the Ray cluster at 127\.0\.0\.2:1"):
        executor_for(ws, "ray", address="127.0.0.2:1", harness="scripted", script=str(SCRIPT))
    assert time.monotonic() - started < 120


def test_the_shipped_folder_holds_the_machines_and_the_script(root: Path, tmp_path: Path) -> None:
    from machine.clients.ray._executor import RayExecutor

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
