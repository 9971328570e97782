"""``machine serve`` driven by a real third-party client: the MCP Inspector CLI (npm
``@modelcontextprotocol/inspector@0.22.0``, from ``.venv/npm``), over stdio and over streamable HTTP with the
bearer header. The Inspector prints each answer as JSON on stdout (its notes go to stderr, kept apart); its
CLI mode opens no browser. Loopback only; every process is bounded by a timeout."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.hosts import host_binary
from helpers.server_workspace import TOOLS, Folder, make_server
from mcp import Client

pytestmark = [pytest.mark.slow, pytest.mark.server]  # MCP Inspector, from npm
LIMIT = 60  # seconds any one Inspector call may take
QUIET = {  # nothing to open, nothing to fetch: the Inspector only speaks to the server under test
    "MCP_AUTO_OPEN_ENABLED": "false",
    "BROWSER": "none",
    "NO_UPDATE_NOTIFIER": "1",
    "npm_config_offline": "true",
}


def inspector(
    *target: str, method: str, cwd: Path, env: dict[str, str] | None = None, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """One ``mcp-inspector --cli`` call: ``target`` is a server command line or an HTTP URL."""
    return subprocess.run(
        [str(host_binary("mcp-inspector")), "--cli", *target, "--method", method, *extra],
        cwd=cwd,
        env=clean_env({**QUIET, **(env or {})}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The Inspector's JSON answer (stdout only; stderr may carry Node's notes)."""
    assert done.returncode == 0, done.stdout + done.stderr
    parsed = json.loads(done.stdout)
    assert isinstance(parsed, dict), done.stdout
    return parsed


def call(tool: str, **args: object) -> tuple[str, ...]:
    pairs = [f"{key}={value}" for key, value in args.items()]
    return ("--tool-name", tool, *(part for pair in pairs for part in ("--tool-arg", pair)))


def text(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


def registered(folder: Folder) -> dict[str, Any]:
    """The tools the server registers, as the SDK's in-process client lists them."""

    async def listing() -> dict[str, Any]:
        server, _ = make_server(folder)
        with anyio.fail_after(LIMIT):
            async with Client(server) as client:
                return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(listing)


# -- stdio ---------------------------------------------------------------------------------------------------


def test_stdio_lists_and_calls_the_tools(folder: Folder, tmp_path: Path) -> None:
    serve = (str(MACHINE_BIN), *folder.serve_args())

    listed = answer(inspector(*serve, method="tools/list", cwd=tmp_path))
    tools = {tool["name"]: tool for tool in listed["tools"]}
    expected = registered(folder)
    assert set(tools) == set(expected) == TOOLS
    for name, tool in tools.items():
        assert tool["inputSchema"] == expected[name].input_schema, name
        assert tool["outputSchema"] == expected[name].output_schema, name
    for name in ("list_machines", "show_machine", "recent_runs"):
        assert tools[name]["annotations"]["readOnlyHint"] is True
    assert tools["rehearse"]["inputSchema"]["required"] == ["name", "budget_usd"]
    assert "consent" not in tools["rehearse"]["inputSchema"]["properties"]  # resolved by the server, hidden

    machines = answer(inspector(*serve, method="tools/call", cwd=tmp_path, extra=call("list_machines")))
    assert machines["isError"] is False
    assert machines["structuredContent"]["workspace"] == str(folder.root)
    assert [m["name"] for m in machines["structuredContent"]["machines"]] == ["red"]
    assert json.loads(text(machines)) == machines["structuredContent"]  # the JSON text copy agrees

    red = answer(inspector(*serve, method="tools/call", cwd=tmp_path, extra=call("show_machine", name="red")))
    assert red["isError"] is False
    shown = red["structuredContent"]
    assert shown["name"] == "red"
    assert [c["name"] for c in shown["criteria"]] == ["calls_when_red"]
    assert shown["criteria"][0]["grader"] == "check:red_rule"
    assert {"cases.json", "holdout.json"} <= set(shown["cases_files"])

    bad = call("show_machine", name="nope")
    nope = answer(inspector(*serve, method="tools/call", cwd=tmp_path, extra=bad))
    assert nope["isError"] is True
    assert "structuredContent" not in nope
    assert text(nope) == (
        "Error executing tool show_machine: there is no machine 'nope'; the known machines are: red"
    )

    # no allowance in the server's env and no elicitation in the Inspector: spending is refused, clearly
    spend = call("rehearse", name="red", budget_usd=0.1)
    refused = answer(inspector(*serve, method="tools/call", cwd=tmp_path, extra=spend))
    assert refused["isError"] is True
    assert "MACHINE_ALLOW_SPEND_USD" in text(refused)
    assert not folder.spending_log.exists() or "rehearse" not in folder.spending_log.read_text()


# -- streamable HTTP -----------------------------------------------------------------------------------------


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    token: str
    log: Path


def _serve_http(folder: Folder, log: Path, token: str) -> Served:
    """``machine serve --http --port 0``; its stderr goes to ``log``, where it prints its URL once bound."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(MACHINE_BIN), *folder.serve_args("--http", "--port", "0")],
            cwd=folder.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=clean_env({"MACHINE_SERVER_TOKEN": token, "MACHINE_ALLOW_SPEND_USD": "1"}),
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", log.read_text(errors="replace"))
        if found:
            return Served(process, found.group(1), token, log)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=15)
    raise AssertionError("machine serve --http did not print its URL:\n" + log.read_text(errors="replace"))


def _stop(served: Served) -> str:
    served.process.terminate()
    try:
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait(timeout=15)
    return served.log.read_text(errors="replace")


@pytest.fixture
def http_server(folder: Folder, tmp_path: Path) -> Iterator[Served]:
    served = _serve_http(folder, tmp_path / "serve.log", secrets.token_urlsafe(32))
    try:
        yield served
    finally:
        log = _stop(served)
        assert served.token not in log  # the token the person set is never logged
        assert "Traceback" not in log, log


def test_http_with_the_bearer_header_lists_rehearses_and_shows_recent_runs(
    http_server: Served, folder: Folder, tmp_path: Path
) -> None:
    url, bearer = http_server.url, f"Authorization: Bearer {http_server.token}"

    def over_http(method: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
        target = (url, "--transport", "http", "--header", bearer)
        done = inspector(*target, method=method, cwd=tmp_path, extra=extra)
        assert http_server.token not in done.stdout + done.stderr
        return answer(done)

    listed = over_http("tools/list")
    assert {tool["name"] for tool in listed["tools"]} == TOOLS

    rehearsed = over_http("tools/call", call("rehearse", name="red", budget_usd=0.5, cases="holdout.json"))
    assert rehearsed["isError"] is False, text(rehearsed)
    result = rehearsed["structuredContent"]
    assert result["machine"] == "red" and result["budget_usd"] == 0.5
    assert result["summary"]["runs"] == 7 and result["summary"]["errors"] == 0
    assert result["consent"]["how"] == "allowance"
    assert len(result["run_ids"]) == 7

    recent = over_http("tools/call", call("recent_runs", name="red", limit=3))
    assert recent["isError"] is False, text(recent)
    runs = recent["structuredContent"]["runs"]
    assert recent["structuredContent"]["limit"] == 3 and len(runs) == 3
    assert {run["id"] for run in runs} <= set(result["run_ids"])
    assert {run["harness"] for run in runs} == {"scripted"}
    assert {run["suite_id"] for run in runs} == {result["suite_id"]}

    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    assert [entry["tool"] for entry in logged] == ["rehearse"]
    assert logged[0]["correlation_id"] == result["consent"]["correlation_id"]


def test_http_without_the_right_token_lists_nothing(http_server: Served, tmp_path: Path) -> None:
    wrong = {"no header": None, "another token": "x" * 43, "one char short": http_server.token[:-1]}
    for given, token in wrong.items():
        headers = ("--header", f"Authorization: Bearer {token}") if token else ()
        done = inspector(http_server.url, "--transport", "http", *headers, method="tools/list", cwd=tmp_path)
        said = done.stdout + done.stderr
        assert done.returncode != 0, f"{given}: {said}"
        assert not any(tool in done.stdout for tool in TOOLS), f"{given}: {said}"
        assert re.search(r"401|Unauthorized|invalid_token|Authentication required", said), f"{given}: {said}"
        assert http_server.token not in said
