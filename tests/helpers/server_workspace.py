"""A small workspace for the server tests: the repository's ``red`` machine copied into a temporary folder,
with its script for the scripted harness, a costly script (every turn is priced) and a malformed cases
file; and the server built over it."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from helpers.env import REPO
from machine.ops import SpendingPolicy
from machine.server.app import build_server

# Every turn uses 100,000 input tokens at red's model (Qwen/Qwen3.8-27B): $0.186 a run.
COSTLY_SCRIPT = {
    "rules": [{"match": "(?s).*", "turns": [{"text": "ok", "usage": {"input_tokens": 100_000}}]}]
}
RUN_COST = 0.186
QUICK = {"text": "No red in that message.", "usage": {"input_tokens": 100_000}}
SLOW_SCRIPT = {
    "rules": [
        {"match": "favourite|bored", "turns": [QUICK]},
        {"match": "(?s).*", "turns": [{**QUICK, "delay": 60}]},
    ]
}
"""Two of red's cases answered at once, the rest a minute later: a call to cancel once two finished."""

TOOLS = {
    *("list_machines", "show_machine", "recent_runs", "show_run", "show_training"),
    *("rehearse", "ask_machine", "commit", "revert"),
    *("specialize", "optimize", "plan_training", "smoke_training", "train", "trust_machine"),
}
"""Every tool ``machine serve`` lists."""


@dataclass
class Folder:
    root: Path

    @property
    def script(self) -> Path:
        return self.root / "machines" / "red" / "script.json"

    @property
    def costly(self) -> Path:
        return self.root / "costly.json"

    @property
    def slow(self) -> Path:
        path = self.root / "slow.json"
        path.write_text(json.dumps(SLOW_SCRIPT), encoding="utf-8")
        return path

    @property
    def spending_log(self) -> Path:
        return self.root / ".machine" / "spending.jsonl"

    def serve_args(self, *transport: str, script: Path | None = None) -> list[str]:
        """``machine serve`` arguments for this workspace with red's script (or ``script``) as the default
        harness."""
        return [
            "serve",
            *transport,
            "--workspace",
            str(self.root),
            "--harness",
            "scripted",
            "--script",
            str(script or self.script),
        ]


def copy_red(root: Path) -> Folder:
    """The workspace at ``root``: red, its broken cases file, the costly script."""
    shutil.copytree(
        REPO / "machines" / "red", root / "machines" / "red", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "machines" / "red" / "broken.json").write_text("[{not json", encoding="utf-8")
    (root / "costly.json").write_text(json.dumps(COSTLY_SCRIPT), encoding="utf-8")
    return Folder(root)


def make_server(
    folder: Folder,
    *,
    allowance: float | None = None,
    script: Path | None = None,
    policy: SpendingPolicy | None = None,
) -> tuple[object, SpendingPolicy]:
    policy = policy or SpendingPolicy(allowance=allowance, log_path=folder.spending_log)
    server = build_server(folder.root, harness="scripted", script=script or folder.script, policy=policy)
    return server, policy
