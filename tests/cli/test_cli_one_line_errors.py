"""Every failure a person can cause is one ``error:`` line and exit status 2, never a traceback, through the
real ``machine`` command: the store is a folder, not a database, or read-only; a cases file nested too
deep or not UTF-8; the port ``machine serve`` is asked for is in use."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.cli_workspace import write_workspace
from helpers.filesystems import remount_read_only, small_tmpfs

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder


def one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def folder_store(ws: WorkspaceFolder) -> None:
    ws.db.mkdir(parents=True)


def text_store(ws: WorkspaceFolder) -> None:
    ws.write(".machine/store.db", "my notes, not a database\n" * 50)


@pytest.mark.parametrize(
    ("spoil", "fragment"),
    [(folder_store, "is a folder, not a file"), (text_store, "is not a SQLite database")],
    ids=["folder", "not-a-database"],
)
@pytest.mark.parametrize(
    "command",
    [("run", "plain", "hi", "--harness", "echo"), ("runs", "plain"), ("suite", "plain", "--harness", "echo")],
    ids=["run", "runs", "suite"],
)
def test_a_store_that_is_not_one_is_one_error_line(
    ws: WorkspaceFolder,
    machine_cmd: Command,
    spoil: Callable[[WorkspaceFolder], None],
    fragment: str,
    command: tuple[str, ...],
) -> None:
    spoil(ws)
    one_error_line(machine_cmd(*command, "--workspace", ws.root), str(ws.db), fragment, "move")


def test_a_read_only_store_is_one_error_line(tmp_path: Path, machine_cmd: Command) -> None:
    with small_tmpfs(tmp_path / "ro", 2048) as mounted:
        ws = write_workspace(mounted / "ws")
        seeded = machine_cmd("run", "plain", "hi", "--harness", "echo", "--workspace", ws.root)
        assert seeded.returncode == 0, seeded.stderr
        remount_read_only(mounted)
        for command in (("run", "plain", "hi", "--harness", "echo"), ("suite", "plain", "--harness", "echo")):
            one_error_line(
                machine_cmd(*command, "--workspace", ws.root), str(ws.db), "is read-only", "writable"
            )


@pytest.mark.parametrize("depth", [100_000, 900, 63], ids=["parser", "serializer", "just-over"])
def test_cases_nested_too_deep_are_one_error_line(
    ws: WorkspaceFolder, machine_cmd: Command, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    cases = ws.write("deep.json", f'[{{"id": "a", "input": "greet ann", "extra": {nested}}}]')
    result = machine_cmd("suite", "greet", "--cases", cases, "--harness", "echo", "--workspace", ws.root)
    one_error_line(result, str(cases), "more than 64 levels deep", "flatten")
    assert ws.count() == 0


def test_cases_at_the_depth_limit_still_run(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    nested = "[" * 62 + "]" * 62  # with the file's list and the case: 64 levels in all
    cases = ws.write("deep.json", f'[{{"id": "ann", "input": "greet ann", "extra": {nested}}}]')
    result = machine_cmd(
        "suite",
        "greet",
        "--cases",
        cases,
        "--harness",
        "scripted",
        "--script",
        ws.script,
        "--workspace",
        ws.root,
    )
    assert result.returncode == 0, result.stderr


def test_cases_that_are_not_utf8_are_one_error_line(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    cases = ws.root / "latin1.json"
    cases.write_bytes('[{"id": "a", "input": "café crème"}]'.encode("latin-1"))
    result = machine_cmd("suite", "greet", "--cases", cases, "--harness", "echo", "--workspace", ws.root)
    one_error_line(result, str(cases), "is not UTF-8", "save it as UTF-8")


def test_a_port_in_use_is_one_error_line(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = machine_cmd(
            "serve", "--http", "--port", str(port), "--workspace", ws.root,
            env={"MACHINE_SERVER_TOKEN": "t" * 40},
        )  # fmt: skip
    finally:
        taken.close()
    one_error_line(result, f"127.0.0.1:{port} is already in use", "--port 0")
