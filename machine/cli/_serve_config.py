"""``machine serve --print-config HOST``: the configuration a host needs to start this server, to paste.

Hosts start servers from a folder of their own with little of the person's environment, so the command
is the absolute path of this ``machine``, the workspace is absolute, and the variables the harness
needs are named in the environment block, with a placeholder where a secret goes (no key is ever
printed). Claude Desktop and Cursor read the same ``mcpServers`` shape; opencode its ``mcp`` one.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HOSTS = ("claude-desktop", "cursor", "opencode")
WHERE = {
    "claude-desktop": "claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, "
    "Windows: %APPDATA%\\Claude\\); restart Claude Desktop after",
    "cursor": ".cursor/mcp.json in your project (or ~/.cursor/mcp.json for every project)",
    "opencode": "opencode.json in your project (or ~/.config/opencode/opencode.json)",
}
KEYS = {
    "tinker": {"TINKER_API_KEY": "your Tinker key"},
    "openrouter": {"OPENROUTER_API_KEY": "your OpenRouter key"},
    "openai": {"OPENAI_BASE_URL": "your endpoint's URL, e.g. http://127.0.0.1:8000/v1"},
}
"""What each harness needs in the server's environment (the free ones need nothing)."""


def executable() -> str:
    """The absolute path of the ``machine`` command running now."""
    beside = Path(sys.executable).parent / "machine"
    if beside.is_file():
        return str(beside)
    found = shutil.which(sys.argv[0]) or sys.argv[0]
    return str(Path(found).resolve())


def host_config(
    host: str,
    workspace: Path,
    harness: str | None,
    script: str | None,
    *,
    trust: bool = True,
    edits: str = "ask",
) -> dict[str, object]:
    """The configuration ``host`` reads, starting ``machine serve`` over ``workspace`` with ``harness``
    (``trust=False``: without trust_machine; ``edits``: how changes to the host's project are made)."""
    args = ["serve", "--workspace", str(workspace.resolve())]
    if not trust:
        args.append("--no-trust-over-mcp")
    if edits != "ask":
        args += ["--edits", edits]
    if harness is not None:
        args += ["--harness", harness]
    if script is not None:
        args += ["--script", str(Path(script).resolve())]
    env = dict(KEYS.get(harness or "tinker", {}))
    command = executable()
    if host == "opencode":
        local = {"type": "local", "command": [command, *args], "environment": env, "enabled": True}
        return {"$schema": "https://opencode.ai/config.json", "mcp": {"machine": local}}
    return {"mcpServers": {"machine": {"command": command, "args": args, "env": env}}}


def printed(
    host: str,
    workspace: Path,
    harness: str | None,
    script: str | None,
    *,
    trust: bool = True,
    edits: str = "ask",
) -> tuple[str, str]:
    """The configuration as JSON, and the note for stderr: where it goes and what to fill in."""
    text = json.dumps(host_config(host, workspace, harness, script, trust=trust, edits=edits), indent=2)
    note = (
        f"paste this into {WHERE[host]}; fill in the placeholders, and add MACHINE_ALLOW_SPEND_USD "
        "to the environment only to let the agent spend up to that many USD without asking you"
    )
    return text, note
