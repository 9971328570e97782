"""``machine serve`` as a real process: the SDK client over stdio and over streamable HTTP with a bearer
token, and what HTTP refuses (no token, a wrong token, a bad Host, a bad Origin). Loopback only; every
wait is bounded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jsonschema
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.served_http import TOKEN, Served, start, stop
from helpers.server_workspace import RUN_COST, TOOLS, Folder
from helpers.tiny_model import needs_local_stack, tiny_model_folder
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from machine import open_workspace, run_suite

pytestmark = pytest.mark.slow
LIMIT = 60
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_stdio_round_trip_with_an_allowance_from_the_env(folder: Folder) -> None:
    params = StdioServerParameters(
        command=str(MACHINE_BIN),
        args=folder.serve_args(),
        env=clean_env({"MACHINE_ALLOW_SPEND_USD": "1"}),
    )
    progress: list[float] = []

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(LIMIT):
        async with Client(params, mode="legacy") as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            listed = await client.call_tool("list_machines", {})
            rehearsed = await client.call_tool(
                "rehearse",
                {"name": "red", "budget_usd": 0.5, "cases": "holdout.json"},
                progress_callback=on_progress,
            )
            recent = await client.call_tool("recent_runs", {"name": "red", "limit": 3})
            bad = await client.call_tool("show_machine", {"name": "blue"})
            run_id = rehearsed.structured_content["run_ids"][0]
            read = await served_views(client, run_id)
    assert read == {"machine://machines": "red", "machine://machines/red": "red", "run": run_id}
    assert tools == TOOLS
    assert listed.structured_content["machines"][0]["name"] == "red"
    assert not rehearsed.is_error, rehearsed.content
    assert rehearsed.structured_content["summary"]["runs"] == 7
    assert rehearsed.structured_content["consent"]["how"] == "allowance"
    assert progress == [1, 2, 3, 4, 5, 6, 7]
    assert len(recent.structured_content["runs"]) == 3
    assert bad.is_error
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged[0]["correlation_id"] == rehearsed.structured_content["consent"]["correlation_id"]


async def test_stdio_without_consent_refuses(folder: Folder) -> None:
    params = StdioServerParameters(
        command=str(MACHINE_BIN),
        args=folder.serve_args(),
        env=clean_env(),
    )
    with anyio.fail_after(LIMIT):
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.5})
    assert result.is_error
    assert "MACHINE_ALLOW_SPEND_USD" in "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def http_server(folder: Folder) -> Iterator[Served]:
    served = start(folder, {"MACHINE_SERVER_TOKEN": TOKEN, "MACHINE_ALLOW_SPEND_USD": "1"})
    try:
        yield served
    finally:
        log = stop(served)
        assert TOKEN not in log  # the token the person set is never logged


async def test_http_round_trip_with_the_bearer_token(http_server: Served) -> None:
    progress: list[float] = []

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(LIMIT):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
            transport = streamable_http_client(http_server.url, http_client=http)
            async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
                tools = {t.name for t in (await client.list_tools()).tools}
                shown = await client.call_tool("show_machine", {"name": "red"})
                rehearsed = await client.call_tool(
                    "rehearse",
                    {"name": "red", "budget_usd": 0.5, "cases": "holdout.json"},
                    progress_callback=on_progress,
                )
                run_id = rehearsed.structured_content["run_ids"][0]
                read = await served_views(client, run_id)
    assert read == {"machine://machines": "red", "machine://machines/red": "red", "run": run_id}
    assert "rehearse" in tools
    assert shown.structured_content["name"] == "red"
    assert not rehearsed.is_error, rehearsed.content
    assert rehearsed.structured_content["summary"]["runs"] == 7
    assert progress == [1, 2, 3, 4, 5, 6, 7]


async def served_views(client: Client, run_id: str) -> dict[str, str]:
    """Every resource template read and every prompt rendered over a real transport: the names read back
    (the machine's, the run's id), checked against the prompts' attachments on the way."""
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"machine://machines/{+name}", "machine://runs/{id}", "machine://training/{id}"}
    read: dict[str, str] = {}
    for uri in ("machine://machines", "machine://machines/red"):
        found = json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        read[uri] = (found.get("machines") or [found])[0]["name"]
    run = json.loads((await client.read_resource(f"machine://runs/{run_id}")).contents[0].text)  # type: ignore[union-attr]
    read["run"] = run["id"]
    prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert prompts == {"improve_machine", "specialize_machine", "explain_run"}
    explained = await client.get_prompt("explain_run", {"id": run_id})
    assert json.loads(explained.messages[1].content.resource.text)["id"] == run_id  # type: ignore[union-attr]
    for name, arguments in (
        ("improve_machine", {"name": "red"}),
        ("specialize_machine", {"name": "red", "focus": "x"}),
    ):
        attached = (await client.get_prompt(name, arguments)).messages[1]
        assert str(attached.content.resource.uri) == "machine://machines/red"  # type: ignore[union-attr]
    schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
    for tool, arguments in (
        ("list_machines", {}),
        ("show_machine", {"name": "red"}),
        ("recent_runs", {"name": "red", "limit": 2}),
        ("show_run", {"id": run_id}),
    ):
        result = await client.call_tool(tool, arguments)
        assert not result.is_error and result.structured_content is not None, tool
        jsonschema.validate(result.structured_content, schemas[tool])  # as the tool declares it
    return read


async def test_http_cancel_mid_rehearse_keeps_and_charges_only_the_finished_runs(folder: Folder) -> None:
    served = start(folder, {"MACHINE_SERVER_TOKEN": TOKEN, "MACHINE_ALLOW_SPEND_USD": "5"}, folder.slow)
    finished = anyio.Event()

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        if done == 2:
            finished.set()

    try:
        with anyio.fail_after(LIMIT):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
                transport = streamable_http_client(served.url, http_client=http)
                client = Client(transport, mode="legacy")  # type: ignore[arg-type]
                async with client, anyio.create_task_group() as group:

                    async def call() -> None:
                        arguments = {"name": "red", "budget_usd": 1}
                        await client.call_tool("rehearse", arguments, progress_callback=on_progress)

                    group.start_soon(call)
                    await finished.wait()
                    group.cancel_scope.cancel()
            with anyio.fail_after(2):  # the server stops the call and settles it within 2 s
                while not folder.spending_log.is_file() or not folder.spending_log.read_text().strip():
                    await anyio.sleep(0.02)
    finally:
        stop(served)
    [logged] = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert logged["spent_usd"] == pytest.approx(2 * RUN_COST)
    assert len(list(open_workspace(folder.root).store.iter_runs("red"))) == 2


async def local_red(folder: Folder, tmp_path: Path) -> StdioServerParameters:
    """red on a tiny local model (made here) with a scripted teacher's runs stored, and machine serve over
    it whose harness is the model's own (local)."""
    needs_local_stack()  # these tests alone: the local trainer on a tiny model made here
    model = tiny_model_folder(tmp_path / "tiny")
    (folder.root / "machines" / "red" / "model.json").write_text(json.dumps({"model": f"local:{model}"}))
    teacher = open_workspace(folder.root, harness="scripted", script=folder.script)
    await run_suite(teacher, teacher.load("red"), teacher.cases("red"), trials=1, model="teacher")
    args = ["serve", "--workspace", str(folder.root), "--script", str(folder.script)]
    env = clean_env({"MACHINE_ALLOW_SPEND_USD": "5", "MACHINE_LOCAL_MAX_TOKENS": "4"})
    return StdioServerParameters(command=str(MACHINE_BIN), args=args, env=env)


TRAIN = {"name": "red", "budget_usd": 1, "any_model": True, "trials": 1, "batch_size": 8, "force": True}


async def test_stdio_train_reports_each_step_and_its_record_reads_back(
    folder: Folder, tmp_path: Path
) -> None:
    served = await local_red(folder, tmp_path)
    heard: list[str] = []

    async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
        heard.append(message or "")

    with anyio.fail_after(300):
        async with Client(served) as client:
            result = await client.call_tool("train", {**TRAIN, "epochs": 1}, progress_callback=on_progress)
            assert not result.is_error, result.content
            record = result.structured_content["training"]["record"]  # type: ignore[index]
            read = await client.read_resource(f"machine://training/{record}")
    steps = [m for m in heard if m.startswith("training step ")]
    assert [m.split(" (")[0] for m in steps] == ["training step 1", "training step 2", "training step 3"]
    assert all("loss " in m for m in steps)
    shown = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    assert shown["record"]["id"] == record and [s["step"] for s in shown["steps"]] == [1, 2, 3]


async def test_stdio_cancel_mid_train_leaves_a_record_that_resumes(folder: Folder, tmp_path: Path) -> None:
    served = await local_red(folder, tmp_path)
    stepped = anyio.Event()

    async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
        if (message or "").startswith("training step 2 "):
            stepped.set()

    long = {**TRAIN, "epochs": 20}  # 60 steps: the cancel comes long before the end
    answered: list[Any] = []
    with anyio.fail_after(300):
        async with Client(served) as client, anyio.create_task_group() as group:

            async def call() -> None:
                answered.append(await client.call_tool("train", long, progress_callback=on_progress))
                stepped.set()  # an answer before step 2 fails the test below, saying what it was

            group.start_soon(call)
            await stepped.wait()
            group.cancel_scope.cancel()
        assert not answered, answered[0].content
        [folder_of] = (folder.root / ".machine" / "training").iterdir()
        with anyio.fail_after(2):  # the server stops the training and says so in its record
            while json.loads((folder_of / "record.json").read_text())["status"] != "stopped":
                await anyio.sleep(0.02)
        async with Client(served) as client:
            resumed = await client.call_tool("train", {**long, "resume": folder_of.name})
    assert not resumed.is_error, resumed.content
    assert resumed.structured_content["training"]["record"] == folder_of.name  # type: ignore[index]


def _post(url: str, headers: dict[str, str]) -> Any:
    return httpx.post(url, json=INIT, headers={**ACCEPT, **headers}, timeout=10)


def test_http_refuses_without_the_right_token_host_or_origin(http_server: Served) -> None:
    url = http_server.url
    good = {"Authorization": f"Bearer {TOKEN}"}
    missing = _post(url, {})
    assert missing.status_code == 401 and "Bearer" in missing.headers.get("www-authenticate", "")
    assert _post(url, {"Authorization": "Bearer " + "x" * 43}).status_code == 401
    assert _post(url, {"Authorization": f"Bearer {TOKEN[:-1]}"}).status_code == 401
    assert _post(url, {"Authorization": TOKEN}).status_code == 401  # not a bearer header
    assert _post(url, {**good, "Host": "evil.example:80"}).status_code == 421
    assert _post(url, {**good, "Origin": "http://evil.example"}).status_code == 403
    assert _post(url, good).status_code == 200  # the same request, right: served


def test_http_generates_and_prints_a_token_once(folder: Folder) -> None:
    served = start(folder, {})
    try:
        found = re.findall(r"^\s+([A-Za-z0-9_-]{43,})\s*$", served.stderr_head, re.M)
        assert len(found) == 1, served.stderr_head
        token = found[0]
        assert "Authorization: Bearer" in served.stderr_head
        assert _post(served.url, {"Authorization": f"Bearer {token}"}).status_code == 200
        assert _post(served.url, {}).status_code == 401
    finally:
        log = stop(served)
    assert log.count(token) == 1  # printed once, never logged again
