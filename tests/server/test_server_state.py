"""What ``machine serve`` keeps between calls, and when it lets go of it: one workspace, one store
connection and the loaded machines for the server's life; recent_runs answers until a run is written (by
the server itself, another connection or another process); machines until one of their files changes.
And what starting it costs: ``initialize`` is answered with no tool module, operation or model loaded."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.server_workspace import TOOLS, Folder, make_server
from mcp import Client

from machine.runs import SQLiteStore
from machine.server.app import MachineServer, build_server

LIMIT = 60  # seconds any one test's calls may take

NOT_AT_START = (
    *("machine.learn", "machine.measure", "machine.ops", "machine.workspace", "machine.runs"),
    *("machine.server._service", "machine.server._tools", "machine.server._learn_tools"),
    *("machine.server._results", "machine.cli._options", "sqlite3"),
    *("torch", "transformers", "openai", "tinker"),
)
"""What a started server has not imported by the time it answers ``initialize``."""
SERVE_TO_EXIT = """\
import atexit, json, sys

out, root = sys.argv[1], sys.argv[2]
atexit.register(lambda: open(out, "w", encoding="utf-8").write(json.dumps(sorted(sys.modules))))
sys.argv = ["machine", "serve", "--workspace", root]
from machine.cli import main

main()
"""
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def served(folder: Folder, allowance: float | None = None) -> MachineServer:
    server, _ = make_server(folder, allowance=allowance)
    assert isinstance(server, MachineServer)
    return server


def counting(calls: list[str], fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(fn.__name__)
        return fn(*args, **kwargs)

    return counted


async def store_a_run_elsewhere(folder: Folder, text: str) -> None:
    """``machine run red TEXT``: a run stored by another process, through its own connection."""
    scripted = ("--harness", "scripted", "--script", str(folder.script))
    with anyio.fail_after(LIMIT):
        done = await anyio.run_process(
            [str(MACHINE_BIN), "run", "red", text, "--workspace", str(folder.root), *scripted],
            env=clean_env(),
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def inputs(result: Any) -> list[str]:
    assert not result.is_error, result.content
    return [run["input_preview"] for run in result.structured_content["runs"]]


async def test_the_workspace_store_and_machines_are_kept_across_calls(folder: Folder) -> None:
    server = served(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            await client.call_tool("list_machines", {})
            service = server.service
            ws, store, red = service.ws, service.ws.store, service.ws.load("red")
            for tool, arguments in [("show_machine", {"name": "red"}), ("recent_runs", {"name": "red"})]:
                assert not (await client.call_tool(tool, arguments)).is_error
            rehearsed = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "holdout.json"}
            )
            assert not rehearsed.is_error, rehearsed.content
            assert not (await client.call_tool("show_machine", {"name": "red"})).is_error
    assert server.service is service
    assert service.ws is ws and ws.store is store  # one workspace, one store connection
    assert ws.load("red") is red  # imported once: its files did not change
    call = service.spending("red", 1.0, None, None, ())
    assert call.store is store  # a spending call's workspace shares the connection too


async def test_a_repeated_recent_runs_is_not_a_query(folder: Folder) -> None:
    server = served(folder)
    queries: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            first = await client.call_tool("recent_runs", {"name": "red"})
            store = server.service.ws.store
            store.summaries = counting(queries, store.summaries)
            again = [await client.call_tool("recent_runs", {"name": "red"}) for _ in range(3)]
            other_limit = await client.call_tool("recent_runs", {"name": "red", "limit": 5})
    assert all(a.structured_content == first.structured_content for a in again)
    assert other_limit.structured_content["limit"] == 5
    assert queries == ["summaries"]  # the other limit only: the repeats were answered from what was kept


async def test_runs_written_by_another_process_or_connection_are_seen(folder: Folder) -> None:
    server = served(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert inputs(await client.call_tool("recent_runs", {"name": "red"})) == []
            await store_a_run_elsewhere(folder, "a red kite")
            assert inputs(await client.call_tool("recent_runs", {"name": "red"})) == ["a red kite"]

            other = SQLiteStore(folder.root / ".machine" / "store.db")  # a second connection, this process
            try:
                written = other.runs("red", limit=1)[0]
                other.put(written.model_copy(update={"id": written.id + "-again", "input": "a red door"}))
            finally:
                other.close()
            assert set(inputs(await client.call_tool("recent_runs", {"name": "red"}))) == {
                "a red kite",
                "a red door",
            }


async def test_runs_the_server_writes_itself_are_seen(folder: Folder) -> None:
    """The server's own store connection does not change the data version it reads for itself: the
    version is read on a connection of its own."""
    server = served(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert inputs(await client.call_tool("recent_runs", {"name": "red"})) == []
            rehearsed = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "holdout.json"}
            )
            assert not rehearsed.is_error, rehearsed.content
            listed = await client.call_tool("recent_runs", {"name": "red"})  # the same call again
    run_ids = rehearsed.structured_content["run_ids"]
    assert len(inputs(listed)) == len(run_ids) > 0
    assert {run["id"] for run in listed.structured_content["runs"]} == set(run_ids)


async def test_an_edited_added_or_removed_machine_is_seen_on_the_next_call(folder: Folder) -> None:
    red = folder.root / "machines" / "red"
    blue = folder.root / "machines" / "blue"
    server = served(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:

            async def show(name: str) -> Any:
                return await client.call_tool("show_machine", {"name": name})

            async def names() -> list[str]:
                listed = await client.call_tool("list_machines", {})
                return [m["name"] for m in listed.structured_content["machines"]]

            assert (await show("red")).structured_content["instructions"].startswith("You watch")
            (red / "instructions.md").write_text("Say only: red.\n", encoding="utf-8")
            assert (await show("red")).structured_content["instructions"] == "Say only: red."

            source = (red / "machine.py").read_text(encoding="utf-8")
            (red / "machine.py").write_text(source.replace("max_steps=3", "max_steps=4"), encoding="utf-8")
            assert (await show("red")).structured_content["max_steps"] == 4

            shutil.copytree(red, blue, ignore=shutil.ignore_patterns("__pycache__"))
            (blue / "machine.py").write_text(source.replace('name="red"', 'name="blue"'), encoding="utf-8")
            assert await names() == ["blue", "red"]
            assert not (await show("blue")).is_error
            assert inputs(await client.call_tool("recent_runs", {"name": "blue"})) == []

            shutil.rmtree(blue)
            assert await names() == ["red"]
            gone = await show("blue")
            assert gone.is_error and "there is no machine 'blue'" in text(gone)
            gone_runs = await client.call_tool("recent_runs", {"name": "blue"})
            assert gone_runs.is_error and "there is no machine 'blue'" in text(gone_runs)


async def test_every_tool_is_listed_whichever_request_comes_first(folder: Folder) -> None:
    with anyio.fail_after(LIMIT):
        listed_first = served(folder)
        async with Client(listed_first) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        called_first = served(folder)
        async with Client(called_first) as client:
            assert not (await client.call_tool("recent_runs", {"name": "red"})).is_error
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS


async def test_an_unusable_allowance_is_every_calls_error(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace and the policy are made on the first call, so a setting they refuse is said there."""
    monkeypatch.setenv("MACHINE_ALLOW_SPEND_USD", "lots")
    server = build_server(folder.root, harness="scripted", script=folder.script)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            for tool, arguments in [("list_machines", {}), ("recent_runs", {"name": "red"})]:
                result = await client.call_tool(tool, arguments)
                assert result.is_error
                assert "MACHINE_ALLOW_SPEND_USD='lots' is not usable" in text(result)


def test_initialize_is_answered_before_the_tools_are_loaded(folder: Folder, tmp_path: Path) -> None:
    """The real ``machine serve`` over stdio: what it had imported when it exited after ``initialize``."""
    out = tmp_path / "modules.json"
    served = subprocess.Popen(
        [sys.executable, "-c", SERVE_TO_EXIT, str(out), str(folder.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    try:
        assert served.stdin is not None and served.stdout is not None
        served.stdin.write(json.dumps(INIT).encode() + b"\n")
        served.stdin.flush()
        ready, _, _ = select.select([served.stdout], [], [], LIMIT)
        assert ready, "no answer to initialize"
        answer = json.loads(served.stdout.readline())
        assert answer["result"]["serverInfo"]["name"] == "machine", answer
        initialized = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
        _, err = served.communicate(initialized, timeout=LIMIT)  # then stdin closes: the server exits
    finally:
        if served.poll() is None:
            served.kill()
            served.communicate(timeout=LIMIT)
    assert served.returncode == 0, err.decode()
    modules = json.loads(out.read_text(encoding="utf-8"))
    assert "machine.server._server" in modules  # the check sees the server's own modules
    loaded = [m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_AT_START)]
    assert loaded == []
