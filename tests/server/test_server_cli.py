"""``machine serve``'s command line: other commands never import the SDK; misuse is a clear error."""

from __future__ import annotations

import subprocess
import sys

from helpers.env import MACHINE_BIN, clean_env
from helpers.server_workspace import Folder


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
