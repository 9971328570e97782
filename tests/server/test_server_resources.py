"""``machine serve`` as a host meets it beyond the tool calls: its version, tool descriptions as clean text
with every argument described, results that validate against the declared output schemas, the resources
(listed, read, and refused naming what exists) and the prompts (listed, rendered with what they are
about attached), the read-only show_run, and a cancelled call keeping and charging only what finished."""

from __future__ import annotations

import json
import time
from importlib import metadata
from typing import Any

import anyio
import jsonschema
import pytest
from helpers.server_workspace import RUN_COST, Folder, make_server
from mcp import Client, MCPError

from machine import open_workspace

LIMIT = 60  # seconds any one test's calls may take
TEMPLATES = {"machine://machines/{+name}", "machine://runs/{id}", "machine://training/{id}"}
PROMPTS = {"improve_machine", "specialize_machine", "explain_run"}


async def rehearsed(client: Client) -> dict[str, Any]:
    result = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1})
    assert not result.is_error and result.structured_content is not None
    return result.structured_content


async def test_the_server_names_its_version_and_describes_every_tool_and_argument(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            version = client.server_info.version
            tools = (await client.list_tools()).tools
    assert version == metadata.version("machine")
    for tool in tools:
        assert tool.description and "\n " not in tool.description and "  " not in tool.description, tool.name
        for argument, schema in tool.input_schema["properties"].items():
            assert len(schema.get("description") or "") >= 10, f"{tool.name}.{argument} is not described"
    train = next(t for t in tools if t.name == "train").input_schema["properties"]
    assert "teacher" in train["any_model"]["description"] and "graded" in train["samples"]["description"]


async def test_results_validate_against_the_declared_output_schemas(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            report = await rehearsed(client)
            calls = {
                "list_machines": {},
                "show_machine": {"name": "red"},
                "recent_runs": {"name": "red", "limit": 3},
                "show_run": {"id": report["run_ids"][0]},
            }
            results = {name: await client.call_tool(name, args) for name, args in calls.items()}
    jsonschema.validate(report, schemas["rehearse"])
    for name, result in results.items():
        assert not result.is_error and result.structured_content is not None, name
        jsonschema.validate(result.structured_content, schemas[name])
    run = results["show_run"].structured_content
    assert run["id"] == report["run_ids"][0] and run["trajectory"]
    assert all(c["reason"] for c in run["scorecard"]["criteria"].values())  # every grader's reason


async def test_every_resource_is_listed_and_read(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            report = await rehearsed(client)
            static = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            run_id = report["run_ids"][0]
            read = {
                uri: (await client.read_resource(uri)).contents[0]
                for uri in ("machine://machines", "machine://machines/red", f"machine://runs/{run_id}")
            }
            with pytest.raises(MCPError, match="there is no machine 'blue'; the known machines are: red"):
                await client.read_resource("machine://machines/blue")
            with pytest.raises(MCPError, match=r"there is no run 'nope'.*the recent_runs tool lists them"):
                await client.read_resource("machine://runs/nope")
            with pytest.raises(MCPError, match="there is no training record 'nope'"):
                await client.read_resource("machine://training/nope")
    assert static == ["machine://machines"] and templates == TEMPLATES
    assert all(item.mime_type == "application/json" for item in read.values())
    machines, red, run = (read[uri].text for uri in read)  # type: ignore[union-attr]
    assert '"name": "red"' in machines and '"criteria"' in red
    assert run_id in run and '"reason"' in run and '"trajectory"' in run


async def test_prompts_are_listed_and_rendered_with_what_they_are_about(folder: Folder) -> None:
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            run_id = (await rehearsed(client))["run_ids"][0]
            listed = {p.name: p for p in (await client.list_prompts()).prompts}
            improve = await client.get_prompt("improve_machine", {"name": "red"})
            special = await client.get_prompt("specialize_machine", {"name": "red", "focus": "hex colours"})
            explain = await client.get_prompt("explain_run", {"id": run_id})
    assert set(listed) == PROMPTS
    assert all(p.title and p.description for p in listed.values())
    assert [a.name for a in listed["specialize_machine"].arguments or []] == ["name", "focus"]
    for rendered, attached in ((improve, "machine://machines/red"), (special, "machine://machines/red")):
        ask, about = rendered.messages
        assert "wait for my yes" in ask.content.text  # type: ignore[union-attr]
        assert str(about.content.resource.uri) == attached  # type: ignore[union-attr]
    assert "hex colours" in special.messages[0].content.text  # type: ignore[union-attr]
    ask, about = explain.messages
    assert run_id in ask.content.text and "Spend nothing" in ask.content.text  # type: ignore[union-attr]
    assert f'"id": "{run_id}"' in about.content.resource.text  # type: ignore[union-attr]


async def test_a_cancelled_rehearse_stops_keeping_and_charging_only_the_runs_that_finished(
    folder: Folder,
) -> None:
    server, policy = make_server(folder, allowance=5, script=folder.slow)
    finished = anyio.Event()
    seen: list[str] = []

    async def on_progress(done: float, _total: float | None, message: str | None) -> None:
        seen.append(message or "")
        if done == 2:
            finished.set()

    with anyio.fail_after(LIMIT):
        async with Client(server) as client, anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool(
                    "rehearse", {"name": "red", "budget_usd": 1}, progress_callback=on_progress
                )

            group.start_soon(call)
            await finished.wait()
            cancelled_at = time.monotonic()
            group.cancel_scope.cancel()
        with anyio.fail_after(2):  # the server's side stops and settles within 2 s of the cancel
            while not folder.spending_log.is_file() or not folder.spending_log.read_text().strip():
                await anyio.sleep(0.02)
        stopped_in = time.monotonic() - cancelled_at
    stored = list(open_workspace(folder.root).store.iter_runs("red"))
    assert len(stored) == 2 and len(seen) == 2  # the two that finished, kept; nothing after
    [logged] = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged["spent_usd"] == pytest.approx(2 * RUN_COST)  # only what finished is charged
    assert policy.allowance_left == pytest.approx(5 - 2 * RUN_COST)
    assert stopped_in < 2
