"""The CLI tests' fixtures: a fresh workspace (``helpers.cli_workspace``), the real console script in a
subprocess, and the command in this process with click's runner."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.cli_workspace import Command, WorkspaceFolder, write_workspace
from helpers.env import MACHINE_BIN, SCRUBBED, clean_env

from machine.cli import cli

TIMEOUT = 120


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceFolder:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def machine_cmd(tmp_path: Path) -> Command:
    """Run the installed ``machine`` console script in a subprocess, in an empty folder by default."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)

    def call(
        *args: str | Path,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MACHINE_BIN), *map(str, args)],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=clean_env(env),
            cwd=cwd or elsewhere,
            timeout=TIMEOUT,
            check=False,
        )

    return call


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., Result]]:
    """Run the command in this process with click's CliRunner (stdout and stderr apart), from an
    empty folder (a run from outside its workspace works in the folder it is started from)."""
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    monkeypatch.chdir(elsewhere)
    runner = CliRunner()

    def call(*args: str | Path, stdin: str | None = None) -> Result:
        return runner.invoke(cli, [str(a) for a in args], input=stdin, catch_exceptions=False)

    yield call
