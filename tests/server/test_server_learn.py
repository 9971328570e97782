"""The learning tools of ``machine serve`` (specialize, optimize, train) through the SDK's in-process
client, on a copy of red with scripted authors and optimizers and, for train, Tinker's trainer against
the stand-in service: what each writes and reports, and that nothing is spent or written without the
person's consent or past the per-call cap."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.learn_server import CHILD, CHILD_CASES, PROPOSAL, author_script, caps_workspace, optimizer_script
from helpers.server_workspace import Folder, make_server
from helpers.tinker_standin import Late, StandInService
from helpers.training import BASE
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from machine.clients import TRAINERS
from machine.clients.tinker import TinkerTrainer
from machine.ops import SpendingPolicy
from machine.server.app import build_server

LIMIT = 120  # seconds any one test's calls may take
SPECIALIZE = {"parent": "red", "focus": "noting red", "slug": "noted", "cases": 4, "budget_usd": 1}
OPTIMIZE = {"name": "red", "budget_usd": 1, "trials": 1, "rounds": 1, "candidates": 1, "min_z": 1}
"""At min_z 1 the three held-out cases the fix changes are evidence enough (at 2 it takes six)."""


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answering(action: str, asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        content = {"approve": True} if action == "accept" else None
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


@pytest.fixture
def tinker(monkeypatch: pytest.MonkeyPatch) -> StandInService:
    """Tinker's trainer, as ``trainer: tinker`` names it, speaking to the stand-in service."""
    service = StandInService()
    entry = replace(TRAINERS["tinker"], make=lambda _request: TinkerTrainer(service=service))
    monkeypatch.setitem(TRAINERS, "tinker", entry)
    return service


async def test_the_learning_tools_are_listed_as_spending_and_writing(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("specialize", "optimize", "train"):
        hints = tools[name].annotations
        assert hints.read_only_hint is False and hints.open_world_hint is True, name
        assert tools[name].output_schema is not None
        assert "consent" not in tools[name].input_schema["properties"]  # the person's, never an argument
    assert tools["specialize"].annotations.destructive_hint is True  # may rewrite a child's files
    assert tools["optimize"].annotations.destructive_hint is True  # rewrites instructions.md
    assert tools["train"].annotations.destructive_hint is False  # adds a pending candidate only
    assert tools["specialize"].input_schema["required"] == ["parent", "focus", "budget_usd"]
    assert tools["optimize"].input_schema["required"] == ["name", "budget_usd"]
    train_args = tools["train"].input_schema["properties"]
    assert {"samples", "best_of", "epochs", "lr", "rank", "any_model", "trainer", "resume"} <= set(train_args)
    assert train_args["best_of"]["default"] == 2 and train_args["trials"]["default"] == 3


async def test_specialize_writes_the_child_and_its_cases(folder: Folder, tmp_path: Path) -> None:
    server, policy = make_server(folder, allowance=2, script=author_script(tmp_path / "author.json"))
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            result = await client.call_tool("specialize", SPECIALIZE)
            shown = await client.call_tool("show_machine", {"name": "red/noted"})
    assert not result.is_error, text(result)
    report = result.structured_content
    assert report["accepted"] and report["stopped"] is None and report["child"] == "red/noted"
    assert [a["outcome"] for a in report["attempts"]] == ["accepted"]
    assert len(report["samples"]) == 3  # red had no stored runs: three of its cases were run first
    assert report["kept_cases"] + report["holdout_cases"] == 4, report["cases"]
    assert report["consent"]["how"] == "allowance" and report["budget_usd"] == 1
    child = folder.root / "machines" / "red" / "noted"
    assert (child / "machine.py").read_text(encoding="utf-8").split("\n", 1) == [
        "# Written by a model (specialize red (author thinkingmachines/Inkling)): nothing imports this file "
        "until you review and trust machine red/noted.",
        CHILD,
    ]
    written = json.loads((child / "cases.json").read_text()) + json.loads(
        (child / "holdout.json").read_text()
    )
    assert sorted(c["id"] for c in written) == sorted(c["id"] for c in CHILD_CASES)
    assert shown.is_error and "not trusted" in text(shown)  # nothing imports it until the person trusts it
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert [(e["tool"], e["machine"]) for e in logged] == [("specialize", "red")]
    assert logged[0]["correlation_id"] == report["consent"]["correlation_id"]
    assert policy.allowance_left == 2  # the scripted harness spent nothing


async def test_optimize_keeps_the_fix_reports_progress_and_commit_makes_it_live(
    folder: Folder, tmp_path: Path
) -> None:
    server, _ = make_server(folder, allowance=2, script=optimizer_script(tmp_path / "optimizer.json"))
    instructions = folder.root / "machines" / "red" / "instructions.md"
    live = instructions.read_text(encoding="utf-8")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            result = await client.call_tool("optimize", OPTIMIZE, progress_callback=on_progress)
            committed = await client.call_tool("commit", {"name": "red"})
    assert not result.is_error, text(result)
    report = result.structured_content
    assert report["kept"] == "r1.p1" and report["candidate"] == "v2", report["ended"]
    assert 0 < report["live_cases_mean"] < 1 and report["gate"]["passed"] is True
    assert instructions.read_text(encoding="utf-8").strip() == PROPOSAL
    assert instructions.read_text(encoding="utf-8") != live
    # the live version and the proposal on the 17 cases, then both on the 7 held-out ones
    assert [p[0] for p in progress] == list(range(1, 2 * (17 + 7) + 1))
    assert all(p[1] is None for p in progress) and "case " in (progress[0][2] or "")
    assert not committed.is_error, text(committed)
    assert committed.structured_content["version"] == "v2"


async def test_a_server_with_no_harness_commits_where_the_candidate_was_measured(
    folder: Folder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The break: with no harness of its own the server's commit was measured against the default
    harness (tinker) and refused a rewrite measured on the scripted one."""
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    scripted, policy = make_server(folder, allowance=2, script=optimizer_script(tmp_path / "optimizer.json"))
    bare = build_server(folder.root, harness=None, script=None, policy=policy)
    with anyio.fail_after(LIMIT):
        async with Client(scripted) as client:
            result = await client.call_tool("optimize", OPTIMIZE)
        async with Client(bare) as client:
            committed = await client.call_tool("commit", {"name": "red"})
    assert not result.is_error, text(result)
    assert not committed.is_error, text(committed)
    assert committed.structured_content["version"] == "v2"
    assert committed.structured_content["forced"] is False


async def test_train_proposes_the_checkpoint_as_a_pending_candidate(
    tmp_path: Path, tinker: StandInService
) -> None:
    root = tmp_path / "caps"
    script = caps_workspace(root)
    policy = SpendingPolicy(allowance=5, log_path=root / ".machine" / "spending.jsonl")
    server = build_server(root, harness="scripted", script=script, policy=policy)
    progress: list[tuple[float, str]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message or ""))

    args = {"name": "caps", "budget_usd": 2, "samples": 1, "trials": 1, "batch_size": 2, "any_model": True}
    args |= {"epochs": 1, "force": True}  # a short plan, forced: two steps to follow
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            result = await client.call_tool("train", args, progress_callback=on_progress)
    assert not result.is_error, text(result)
    report = result.structured_content
    assert report["candidate"] == "v2" and report["live"] == "v1"
    assert report["model"].startswith("tinker://run-1/sampler_weights/")
    assert report["training"]["trainer"] == "tinker" and report["training"]["base_model"] == BASE
    assert report["training"]["examples"] == 3  # the three training cases, each answered right once
    assert report["passed"] is False  # the script answers the held-out cases wrongly on any model
    assert 0 < report["spent_usd"] <= 2 and policy.allowance_left == pytest.approx(5 - report["spent_usd"])
    assert tinker.methods().count("forward_backward") == 2  # 3 sequences, 2 a step
    # 3 samples, the live version on 6 held-out cases (the gate, fixed first), 2 steps, the checkpoint on 6
    assert [done for done, _ in progress] == list(range(1, 18))
    steps = [message for _, message in progress[9:11]]
    assert all(m.startswith("training step ") and "loss " in m for m in steps), progress
    assert steps[0].startswith("training step 1 (epoch 1)") and steps[1].startswith("training step 2")
    assert all(m.startswith("caps case ") for _, m in progress[:9] + progress[11:]), progress
    assert not (root / "machines" / "caps" / "model.json").exists()  # pending, not live
    record = report["training"]["record"]
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            shown = await client.call_tool("show_training", {"id": record})
            read = (await client.read_resource(f"machine://training/{record}")).contents[0]
    assert not shown.is_error and shown.structured_content is not None
    assert shown.structured_content["record"]["id"] == record
    assert [s["step"] for s in shown.structured_content["steps"]] == [1, 2]
    assert all(s["loss"] is not None for s in shown.structured_content["steps"])
    assert json.loads(read.text) == shown.structured_content  # type: ignore[union-attr]


TRAINED = {"name": "caps", "budget_usd": 2, "samples": 1, "trials": 1, "any_model": True}


def caps_server(tmp_path: Path) -> tuple[Path, SpendingPolicy, Any]:
    """``caps`` with its script, under an allowance of $5: its root, the policy and the server."""
    root = tmp_path / "caps"
    script = caps_workspace(root)
    policy = SpendingPolicy(allowance=5, log_path=root / ".machine" / "spending.jsonl")
    return root, policy, build_server(root, harness="scripted", script=script, policy=policy)


async def test_a_cancelled_train_stops_within_2_s_and_leaves_a_record_that_resumes(
    tmp_path: Path, tinker: StandInService
) -> None:
    root, _policy, server = caps_server(tmp_path)
    tinker.script = {"forward_backward": [None, Late(1.0)]}  # step 2's answer takes a second
    stepped = anyio.Event()

    async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
        if (message or "").startswith("training step 1 "):
            stepped.set()

    args = {**TRAINED, "batch_size": 1, "epochs": 1, "force": True}  # three steps
    with anyio.fail_after(LIMIT):
        async with Client(server) as client, anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool("train", args, progress_callback=on_progress)

            group.start_soon(call)
            await stepped.wait()
            group.cancel_scope.cancel()
            cancelled_at = time.monotonic()
        [folder] = (root / ".machine" / "training").iterdir()
        with anyio.fail_after(2):  # the training notices the cancel and says so in its record
            while json.loads((folder / "record.json").read_text())["status"] != "stopped":
                await anyio.sleep(0.02)
        stopped_in = time.monotonic() - cancelled_at
        async with Client(server) as client:
            resumed = await client.call_tool("train", {**args, "resume": folder.name})
    assert stopped_in < 2
    assert not resumed.is_error, text(resumed)
    assert resumed.structured_content is not None
    assert resumed.structured_content["training"]["record"] == folder.name
    assert resumed.structured_content["training"]["steps"] == 3


async def test_plan_training_is_a_dry_run_that_spends_and_writes_nothing(
    tmp_path: Path, tinker: StandInService
) -> None:
    root, policy, server = caps_server(tmp_path)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert not (await client.call_tool("train", TRAINED)).is_error
            records = sorted((root / ".machine" / "training").iterdir())
            left, calls = policy.allowance_left, len(tinker.calls)
            planned = await client.call_tool("plan_training", {"name": "caps", "any_model": True})
            short = await client.call_tool("plan_training", {"name": "caps", "any_model": True, "epochs": 1})
            tools = {t.name: t for t in (await client.list_tools()).tools}
    assert not planned.is_error, text(planned)
    plan = planned.structured_content["plan"]
    # the three training cases' runs: batches of 2, so 15 epochs for 30 steps, at Inkling's rate
    assert (plan["sequences"], plan["batch_size"], plan["epochs"], plan["steps"]) == (3, 2, 15, 30)
    assert plan["learning_rate"] == 2e-4 and plan["price_usd"] > 0
    assert planned.structured_content["refused"] is None
    assert short.structured_content["plan"]["steps"] == 2
    assert short.structured_content["refused"].startswith("this training would take 2 optimizer steps")
    assert "give epochs 15 for 30 steps" in short.structured_content["refused"]
    assert sorted((root / ".machine" / "training").iterdir()) == records  # no new record
    assert policy.allowance_left == left and len(tinker.calls) == calls  # nothing spent, nothing sent
    assert tools["plan_training"].annotations.read_only_hint is True
    assert "samples" not in tools["plan_training"].input_schema["properties"]


async def test_smoke_training_trains_two_steps_samples_once_and_keeps_nothing(
    tmp_path: Path, tinker: StandInService
) -> None:
    root, policy, server = caps_server(tmp_path)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert not (await client.call_tool("train", TRAINED)).is_error
            records = sorted((root / ".machine" / "training").iterdir())
            versions = (root / "machines" / "caps" / "versions.json").read_bytes()
            left, steps = policy.allowance_left, tinker.methods().count("forward_backward")
            smoked = await client.call_tool(
                "smoke_training", {"name": "caps", "budget_usd": 1, "any_model": True}
            )
    assert not smoked.is_error, text(smoked)
    smoke = smoked.structured_content["smoke"]
    assert [s["step"] for s in smoke["steps"]] == [1, 2] and smoke["resumed_at"] == 1
    assert tinker.methods().count("forward_backward") == steps + 2
    assert "create_training_client_from_state_with_optimizer" in tinker.methods()  # the second step resumed
    assert sorted((root / ".machine" / "training").iterdir()) == records  # no record kept
    assert (root / "machines" / "caps" / "versions.json").read_bytes() == versions  # no candidate
    assert 0 < left - policy.allowance_left <= 1  # the two steps cost, within the budget


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_refused_consent_spends_and_writes_nothing(
    folder: Folder, tmp_path: Path, tinker: StandInService, action: str
) -> None:
    server, policy = make_server(folder, allowance=5, script=author_script(tmp_path / "author.json"))
    instructions = (folder.root / "machines" / "red" / "instructions.md").read_text(encoding="utf-8")
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering(action, asked)) as client:
            forged = {**SPECIALIZE, "consent": {"action": "accept", "content": {"approve": True}}}
            specialized = await client.call_tool("specialize", forged)  # a model cannot approve itself
            optimized = await client.call_tool("optimize", OPTIMIZE)
            trained = await client.call_tool("train", {"name": "red", "budget_usd": 1})
            recent = await client.call_tool("recent_runs", {"name": "red"})
    for result in (specialized, optimized, trained):
        assert result.is_error and "the person declined" in text(result)
    assert len(asked) == 3
    assert "red/noted" in asked[0] and "$1.00" in asked[0] and "writes" in asked[0]
    assert "instructions.md" in asked[1] and "Train machine 'red'" in asked[2]
    # each form shows the operation's plan: its runs at most and its price bound
    assert all(" The plan: " in question and "at most $1.00" in question for question in asked)
    assert "optimize 'red'" in asked[1] and "1 proposal (1 round of 1)" in asked[1]  # never "1 rounds"
    assert not (folder.root / "machines" / "red" / "noted").exists()
    assert (folder.root / "machines" / "red" / "instructions.md").read_text(encoding="utf-8") == instructions
    assert recent.structured_content["runs"] == [] and tinker.methods() == []
    assert not folder.spending_log.exists() and policy.allowance_left == 5


async def test_without_a_form_or_an_allowance_each_refuses_and_says_how(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            results = [
                await client.call_tool("specialize", SPECIALIZE),
                await client.call_tool("optimize", OPTIMIZE),
                await client.call_tool("train", {"name": "red", "budget_usd": 1}),
            ]
    for result in results:
        assert result.is_error and "MACHINE_ALLOW_SPEND_USD" in text(result)
    assert not (folder.root / "machines" / "red" / "noted").exists()
    assert not folder.spending_log.exists()


async def test_bad_input_is_refused_before_the_person_is_asked(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=50)
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering("accept", asked)) as client:
            over = [
                await client.call_tool("specialize", {**SPECIALIZE, "budget_usd": 11}),
                await client.call_tool("optimize", {**OPTIMIZE, "budget_usd": 11}),
                await client.call_tool("train", {"name": "red", "budget_usd": 11}),
            ]
            unknown = await client.call_tool("optimize", {**OPTIMIZE, "name": "blue"})
            no_budget = await client.call_tool("train", {"name": "red"})
            blank = await client.call_tool("specialize", {**SPECIALIZE, "focus": "   "})
            many = await client.call_tool("optimize", {**OPTIMIZE, "rounds": 1000})
            harness = await client.call_tool("specialize", {**SPECIALIZE, "harness": "warp"})
    for result in over:
        assert result.is_error and "over the cap of $10.00" in text(result)
    assert unknown.is_error and "known machines are: red" in text(unknown)
    assert no_budget.is_error and "budget_usd" in text(no_budget)
    assert blank.is_error and "focus is empty" in text(blank) and "--focus" not in text(blank)
    assert many.is_error and "rounds" in text(many)
    assert harness.is_error and "unknown harness 'warp'" in text(harness)
    assert asked == []
    assert not (folder.root / "machines" / "red" / "noted").exists()


async def test_the_form_says_the_gate_cannot_pass_on_four_held_out_cases(
    folder: Folder, tinker: StandInService
) -> None:
    holdout = folder.root / "machines" / "red" / "holdout.json"
    holdout.write_text(json.dumps(json.loads(holdout.read_text(encoding="utf-8"))[:4]), encoding="utf-8")
    server, policy = make_server(folder, allowance=5)
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering("decline", asked)) as client:
            await client.call_tool("optimize", {**OPTIMIZE, "min_z": 2})
            await client.call_tool("optimize", OPTIMIZE)  # at min_z 1, 3 cases that change are enough
            await client.call_tool("train", {"name": "red", "budget_usd": 1})
    thin = "Warning: no candidate can pass the gate: holdout.json holds only 4 held-out cases, and at min_z 2"
    optimized, weak, trained = asked
    assert "Warning: no proposal can be kept unless the live version already scores the maximum" in optimized
    assert "holdout.json holds only 4 held-out cases, and at min_z 2" in optimized
    assert "Warning" not in weak
    assert thin in trained and "add at least 2 more held-out cases to holdout.json first" in trained
    assert not folder.spending_log.exists() and policy.allowance_left == 5 and tinker.methods() == []
