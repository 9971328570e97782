"""Every tool of ``machine serve`` through the SDK's in-process client: results, bad input and consent."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from helpers.server_workspace import RUN_COST, TOOLS, Folder, make_server
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from machine import open_workspace
from machine.clients import make_harness
from machine.versions import propose

LIMIT = 60  # seconds any one test's calls may take


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answering(action: str, approve: bool = True, asked: list[str] | None = None) -> Any:
    async def callback(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        if asked is not None:
            asked.append(params.message)
        content = {"approve": approve} if action == "accept" else None
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


async def test_tools_are_listed_with_annotations_and_output_schemas(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for name in ("list_machines", "show_machine", "recent_runs"):
        assert tools[name].annotations.read_only_hint is True
    assert tools["rehearse"].annotations.open_world_hint is True
    assert tools["rehearse"].annotations.read_only_hint is False
    assert tools["commit"].annotations.destructive_hint is True
    assert tools["revert"].annotations.destructive_hint is True
    for tool in tools.values():
        assert tool.output_schema is not None
    props = tools["rehearse"].input_schema["properties"]
    assert set(props) == {"name", "budget_usd", "trials", "cases", "model", "harness"}  # consent is hidden
    assert tools["rehearse"].input_schema["required"] == ["name", "budget_usd"]
    assert set(tools["commit"].input_schema["properties"]) == {"name", "force"}


async def test_read_only_tools(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            listed = await client.call_tool("list_machines", {})
            shown = await client.call_tool("show_machine", {"name": "red"})
            recent = await client.call_tool("recent_runs", {"name": "red"})
    assert not listed.is_error
    assert [m["name"] for m in listed.structured_content["machines"]] == ["red"]
    assert not shown.is_error
    detail = shown.structured_content
    assert detail["model"] == "Qwen/Qwen3.8-27B"
    assert [t["name"] for t in detail["tools"]] == ["red_mentioned"]
    assert "holdout.json" in detail["cases_files"] and "cases.json" in detail["cases_files"]
    assert "script.json" not in detail["cases_files"]  # a script for the scripted harness is no cases file
    assert recent.structured_content == {"machine": "red", "limit": 20, "runs": []}


async def test_a_free_harness_runs_a_model_the_price_table_does_not_know(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:  # the teacher step: a scripted teacher, no price needed
            taught = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1, "model": "teacher"})
    assert not taught.is_error and taught.structured_content is not None
    assert taught.structured_content["spent_usd"] == 0.0 and len(taught.structured_content["run_ids"]) > 0


async def test_bad_input_is_a_clear_error(folder: Folder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-never-sent")  # refused before any call is made
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            unknown = await client.call_tool("show_machine", {"name": "blue"})
            unknown_runs = await client.call_tool("recent_runs", {"name": "blue"})
            too_many = await client.call_tool("recent_runs", {"name": "red", "limit": 100_000})
            negative = await client.call_tool("rehearse", {"name": "red", "budget_usd": -1})
            over_cap = await client.call_tool("rehearse", {"name": "red", "budget_usd": 11})
            no_budget = await client.call_tool("rehearse", {"name": "red"})
            unknown_rehearse = await client.call_tool("rehearse", {"name": "blue", "budget_usd": 1})
            malformed = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "broken.json"}
            )
            missing = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "nope.json"}
            )
            escape = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "../../costly.json"}
            )
            trials = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1, "trials": 0})
            harness = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1, "harness": "warp"})
            unpriced = await client.call_tool(
                "rehearse",
                {"name": "red", "budget_usd": 1, "model": "acme/unpriced", "harness": "openrouter"},
            )
            commit_unknown = await client.call_tool("commit", {"name": "blue"})
            still_listed = await client.call_tool("list_machines", {})
    assert unknown.is_error and "there is no machine 'blue'; the known machines are: red" in text(unknown)
    assert unknown_runs.is_error and "known machines are: red" in text(unknown_runs)
    assert too_many.is_error and "limit=100000" in text(too_many)
    assert negative.is_error and "budget_usd=-1" in text(negative)
    assert over_cap.is_error and "over the cap of $10.00" in text(over_cap)
    assert no_budget.is_error and "budget_usd" in text(no_budget)
    assert unknown_rehearse.is_error and "known machines are: red" in text(unknown_rehearse)
    assert malformed.is_error and "broken.json" in text(malformed) and "cannot" in text(malformed)
    assert missing.is_error and "available:" in text(missing) and "holdout.json" in text(missing)
    assert escape.is_error and "not a cases file" in text(escape)
    assert trials.is_error and "trials=0" in text(trials)
    assert harness.is_error and "unknown harness 'warp'" in text(harness)
    assert unpriced.is_error and "no known price" in text(unpriced)
    assert commit_unknown.is_error and "known machines are: red" in text(commit_unknown)
    assert not still_listed.is_error  # the server lives on
    assert not folder.spending_log.exists()  # nothing was allowed, so nothing was spent or logged


async def test_rehearse_with_an_allowance_reports_progress_and_stores_runs(folder: Folder) -> None:
    server, policy = make_server(folder, allowance=2)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            result = await client.call_tool(
                "rehearse",
                {"name": "red", "budget_usd": 1, "cases": "holdout.json", "trials": 2},
                progress_callback=on_progress,
            )
            recent = await client.call_tool("recent_runs", {"name": "red", "limit": 5})
    assert not result.is_error, text(result)
    data = result.structured_content
    assert data["summary"]["runs"] == 14 and data["summary"]["mean"] == 1.0
    assert len(data["run_ids"]) == 14 and len(data["cases"]) == 7
    assert data["consent"]["how"] == "allowance"
    assert [p[0] for p in progress] == list(range(1, 15)) and {p[1] for p in progress} == {14}
    assert len(recent.structured_content["runs"]) == 5
    assert {r["id"] for r in recent.structured_content["runs"]} <= set(data["run_ids"])
    assert policy.allowance_left == 2  # the scripted harness spent nothing
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged[0]["correlation_id"] == data["consent"]["correlation_id"]
    assert logged[0]["tool"] == "rehearse" and logged[0]["budget_usd"] == 1
    assert logged[0]["consent"]["how"] == "allowance"


async def test_no_elicitation_and_no_allowance_refuses_and_says_how(folder: Folder) -> None:
    await _candidate(folder)  # v2 pending, with the runs that measured it
    made = len(list(open_workspace(folder.root).store.iter_runs("red")))
    server, _ = make_server(folder)
    allowed, _ = make_server(folder, allowance=0)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            rehearse = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1})
            commit = await client.call_tool("commit", {"name": "red", "force": True})
        async with Client(allowed) as client:  # v2 live, so there is a version to revert to
            assert not (await client.call_tool("commit", {"name": "red", "force": True})).is_error
        async with Client(server) as client:
            revert = await client.call_tool("revert", {"name": "red"})
            recent = await client.call_tool("recent_runs", {"name": "red", "limit": 100})
    assert rehearse.is_error and "MACHINE_ALLOW_SPEND_USD" in text(rehearse)
    assert "elicitation" in text(rehearse)
    for changing in (commit, revert):
        assert changing.is_error and "MACHINE_ALLOW_SPEND_USD" in text(changing)
        assert "also authorises the changing tools" in text(changing)
    assert len(recent.structured_content["runs"]) == made  # nothing ran


async def test_allowance_runs_out_across_calls(folder: Folder) -> None:
    server, policy = make_server(folder, allowance=1, script=folder.costly)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            first = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.5})
            second = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.5})
            third = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.2})
    assert not first.is_error, text(first)
    spent = first.structured_content["spent_usd"]
    assert spent >= 0.5 and first.structured_content["stopped"]  # the budget stopped the suite
    assert first.structured_content["summary"]["runs"] < 17
    assert spent == pytest.approx(first.structured_content["summary"]["runs"] * RUN_COST)
    assert second.is_error and "only $" in text(second) and "left of the allowance" in text(second)
    assert not third.is_error, text(third)
    assert policy.allowance_left == pytest.approx(max(0.0, 1 - spent - third.structured_content["spent_usd"]))
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert [e["spent_usd"] for e in logged] == pytest.approx([spent, third.structured_content["spent_usd"]])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_elicitation_accepted(folder: Folder, mode: str) -> None:
    server, policy = make_server(folder)  # no allowance: the form is the only consent
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, mode=mode, elicitation_callback=answering("accept", asked=asked)) as client:  # type: ignore[arg-type]
            result = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 0.25, "cases": "holdout.json"}
            )
    assert not result.is_error, text(result)
    assert len(asked) == 1 and "'red'" in asked[0] and "$0.25" in asked[0] and "holdout.json" in asked[0]
    assert result.structured_content["consent"]["how"] == "elicitation"
    assert result.structured_content["summary"]["runs"] == 7
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged[0]["consent"]["how"] == "elicitation" and logged[0]["budget_usd"] == 0.25
    assert policy.allowance_left is None


async def test_the_form_takes_a_smaller_amount_that_caps_the_call(folder: Folder) -> None:
    server, _ = make_server(folder, script=folder.costly)
    schemas: list[dict[str, Any]] = []

    async def capping(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        schemas.append(params.requested_schema)  # type: ignore[attr-defined]
        return ElicitResult(action="accept", content={"approve": True, "budget_usd": 0.1})

    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=capping) as client:
            result = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1})
    assert not result.is_error, text(result)
    assert set(schemas[0]["properties"]) == {"approve", "budget_usd"}
    assert schemas[0]["required"] == ["approve"]
    assert result.structured_content["budget_usd"] == 0.1
    assert 0 < result.structured_content["spent_usd"] <= 0.1 + RUN_COST  # a plain cap: one call past, at most
    assert "capped at $0.10" in result.structured_content["consent"]["detail"]
    [logged] = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged["budget_usd"] == 0.1


@pytest.mark.parametrize(("action", "approve"), [("decline", True), ("cancel", True), ("accept", False)])
async def test_elicitation_declined(folder: Folder, action: str, approve: bool) -> None:
    await _candidate(folder)
    made = len(list(open_workspace(folder.root).store.iter_runs("red")))
    server, _ = make_server(folder, allowance=5)  # an allowance does not override the person's "no"
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering(action, approve)) as client:
            rehearse = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1})
            commit = await client.call_tool("commit", {"name": "red", "force": True})
            recent = await client.call_tool("recent_runs", {"name": "red"})
    for result in (rehearse, commit):
        assert result.is_error and "the person declined" in text(result)
    assert len(recent.structured_content["runs"]) == made  # the candidate's measuring runs alone
    assert not folder.spending_log.exists()


async def test_elicitation_is_not_asked_for_bad_input(folder: Folder) -> None:
    server, _ = make_server(folder)
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering("accept", asked=asked)) as client:
            result = await client.call_tool("rehearse", {"name": "red", "budget_usd": 50})
    assert result.is_error and "over the cap" in text(result)
    assert asked == []


async def _candidate(folder: Folder) -> None:
    """A pending candidate of red (the same answers on another model): it does not pass the gate."""
    ws = open_workspace(folder.root, harness=make_harness("scripted", script=folder.script))
    await propose(ws, "red", model="Qwen/Qwen3.6-27B", trials=1)
    await ws.aclose()
    ws.store.close()  # type: ignore[attr-defined]


async def test_commit_goes_through_the_gate_and_revert_undoes_it(folder: Folder) -> None:
    await _candidate(folder)
    server, _ = make_server(folder, allowance=0)  # an allowance of 0 authorises changes, no spending
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            refused = await client.call_tool("commit", {"name": "red"})
            forced = await client.call_tool("commit", {"name": "red", "force": True})
            shown = await client.call_tool("show_machine", {"name": "red"})
            reverted = await client.call_tool("revert", {"name": "red"})
            again = await client.call_tool("revert", {"name": "red"})
            spend = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.1})
    assert refused.is_error and "commit refused" in text(refused) and "gate" in text(refused)
    assert not forced.is_error, text(forced)
    assert forced.structured_content["forced"] is True
    assert forced.structured_content["model"] == "Qwen/Qwen3.6-27B"
    assert forced.structured_content["consent"]["how"] == "allowance"
    assert not shown.is_error and shown.structured_content["model"] == "Qwen/Qwen3.6-27B"
    assert not reverted.is_error, text(reverted)
    assert reverted.structured_content["model"] == "Qwen/Qwen3.8-27B"
    assert not (folder.root / "machines" / "red" / "model.json").exists()  # v1 had none: written back
    assert again.is_error  # nothing earlier to go back to
    assert spend.is_error and "left of the allowance" in text(spend)  # 0 allows no spending


async def test_commit_with_elicitation(folder: Folder) -> None:
    await _candidate(folder)
    server, _ = make_server(folder)
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering("accept", asked=asked)) as client:
            forced = await client.call_tool("commit", {"name": "red", "force": True})
            reverted = await client.call_tool("revert", {"name": "red"})
    assert not forced.is_error, text(forced)
    assert forced.structured_content["consent"]["how"] == "elicitation"
    assert "force" in asked[0] and "Revert" in asked[1]
    assert not reverted.is_error, text(reverted)
