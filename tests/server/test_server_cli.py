"""``machine serve``'s command line: other commands never import the SDK; misuse is a clear error; the
configuration --print-config prints starts a working server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.learn_server import CHILD, CHILD_RUBRIC
from helpers.server_workspace import Folder
from mcp import Client, StdioServerParameters

from machine.spec import TRUST_FILE, TrustBook


def test_help_does_not_import_the_sdk() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from machine.cli import cli\n"
        "result = CliRunner().invoke(cli, ['--help'])\n"
        "assert 'serve' in result.output, result.output\n"
        "CliRunner().invoke(cli, ['serve', '--help'])\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'uvicorn'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_misuse_is_a_clear_error(folder: Folder) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MACHINE_BIN), "serve", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            check=False,
        )

    port = serve("--port", "9000", "--workspace", str(folder.root))
    assert port.returncode == 2 and "--host and --port are for --http" in port.stderr
    missing = serve("--workspace", str(folder.root / "nowhere"))
    assert missing.returncode == 2 and "is not a folder" in missing.stderr
    short = subprocess.run(
        [str(MACHINE_BIN), "serve", "--http", "--port", "0", "--workspace", str(folder.root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env({"MACHINE_SERVER_TOKEN": "short"}),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert short.returncode == 2 and "MACHINE_SERVER_TOKEN is too short" in short.stderr
    assert "short\n" not in short.stdout


@pytest.mark.slow
@pytest.mark.parametrize("host", ["claude-desktop", "cursor", "opencode"])
async def test_the_printed_config_starts_a_server_a_client_can_use(folder: Folder, host: str) -> None:
    """What --print-config prints is what the host runs: started as the host would, it serves red."""
    printed = subprocess.run(
        [str(MACHINE_BIN), "serve", "--print-config", host, *folder.serve_args()[1:]],
        capture_output=True, text=True, timeout=60, env=clean_env(), cwd="/", check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert "paste this into" in printed.stderr and "MACHINE_ALLOW_SPEND_USD" in printed.stderr
    config = json.loads(printed.stdout)
    if host == "opencode":
        entry = config["mcp"]["machine"]
        command, *args = entry["command"]
        env = entry["environment"]
    else:
        entry = config["mcpServers"]["machine"]
        command, args, env = entry["command"], entry["args"], entry["env"]
    assert Path(command).is_absolute() and env == {}  # the scripted harness needs no key
    assert str(folder.root) in args and str(folder.script) in args
    params = StdioServerParameters(command=command, args=args, env=clean_env(env), cwd="/")
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            listed = await client.call_tool("list_machines", {})
    assert listed.structured_content is not None
    assert [m["name"] for m in listed.structured_content["machines"]] == ["red"]


@pytest.mark.slow
async def test_no_trust_over_mcp_leaves_trust_machine_out_of_the_server(folder: Folder) -> None:
    """A client that answers the host's form by itself trusts on the person's behalf: with
    --no-trust-over-mcp (carried into the printed configuration) the server started as a host starts it
    neither lists nor runs trust_machine, and a refusal says to trust in a terminal."""
    child = folder.root / "machines" / "red" / "noted"
    code = {child / "machine.py": CHILD, child / "rubric.py": CHILD_RUBRIC}
    TrustBook(folder.root / ".machine" / TRUST_FILE, folder.root / "machines").record(
        "red/noted", code, by="a"
    )
    for path, content in code.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    (child / "instructions.md").write_text("Flag red.\n", encoding="utf-8")
    printed = subprocess.run(
        [str(MACHINE_BIN), "serve", "--print-config", "claude-desktop", "--no-trust-over-mcp",
         *folder.serve_args()[1:]],
        capture_output=True, text=True, timeout=60, env=clean_env(), cwd="/", check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["machine"]
    assert "--no-trust-over-mcp" in entry["args"]
    served: dict[bool, set[str]] = {}
    for trust, args in ((False, entry["args"]), (True, folder.serve_args())):
        params = StdioServerParameters(command=entry["command"], args=args, env=clean_env(), cwd="/")
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as client:
                served[trust] = {tool.name for tool in (await client.list_tools()).tools}
                called = await client.call_tool("trust_machine", {"name": "red/noted"})
                shown = await client.call_tool("show_machine", {"name": "red/noted"})
                said = client.instructions or ""
        words = "\n".join(getattr(c, "text", "") for c in [*called.content, *shown.content])
        if not trust:
            assert called.is_error and "trust_machine" in words and "Unknown tool" in words
            assert shown.is_error and "trusting it in a terminal" in words
            assert "this server does not offer trust_machine" in said
    assert served[True] - served[False] == {"trust_machine"}
    assert (child / "machine.py").read_text(encoding="utf-8") == CHILD  # untouched, and still untrusted
    assert TrustBook(folder.root / ".machine" / TRUST_FILE, folder.root / "machines").pending("red/noted")
