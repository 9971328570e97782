"""The CLI's spending goes through the same policy as the MCP server: one line per spending command in
``.machine/spending.jsonl``, consented by the person typing the command."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]

RUN_COST = 0.186  # one turn of the costly script at Qwen3.8-27B's price


def costly(ws: WorkspaceFolder) -> list[str]:
    return ["--harness", "scripted", "--script", str(ws.costly_script), "--workspace", str(ws.root)]


def log_path(ws: WorkspaceFolder) -> Path:
    return Path(ws.root) / ".machine" / "spending.jsonl"


def log_lines(ws: WorkspaceFolder) -> list[dict[str, Any]]:
    path = log_path(ws)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def test_run_writes_one_line_with_command_machine_spend_and_consent(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    ok(invoke("run", "greet", "greet ann", *costly(ws)))
    [line] = log_lines(ws)
    assert line["tool"] == "run"
    assert line["machine"] == "greet"
    assert line["spent_usd"] == pytest.approx(RUN_COST)
    assert line["budget_usd"] == 1.0  # the default --budget
    assert line["consent"] == {"how": "command", "detail": "machine run --budget 1"}
    assert re.fullmatch(r"spend-[0-9a-f]{12}", line["correlation_id"])
    assert stat.S_IMODE(log_path(ws).stat().st_mode) == 0o600


def test_suite_writes_one_line_for_all_its_runs(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("suite", "greet", "--trials", "2", *costly(ws)))
    [line] = log_lines(ws)
    assert line["tool"] == "suite"
    assert line["machine"] == "greet"
    assert line["spent_usd"] == pytest.approx(6 * RUN_COST)  # 3 cases x 2 trials
    assert line["consent"]["how"] == "command"


def test_each_command_appends_its_own_line(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("run", "greet", "greet ann", *costly(ws)))
    ok(invoke("suite", "greet", *costly(ws)))
    first, second = log_lines(ws)
    assert [first["tool"], second["tool"]] == ["run", "suite"]
    assert first["correlation_id"] != second["correlation_id"]
    assert second["spent_usd"] == pytest.approx(3 * RUN_COST)


def test_the_persons_budget_is_not_held_to_the_per_call_cap(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MACHINIST_MAX_BUDGET caps what a model asks for; the person's own --budget is logged as given."""
    monkeypatch.setenv("MACHINIST_MAX_BUDGET", "0.5")
    ok(invoke("run", "greet", "greet ann", "--budget", "50", *costly(ws)))
    ok(invoke("run", "greet", "greet ann", "--budget", "none", *costly(ws)))
    capped, uncapped = log_lines(ws)
    assert capped["budget_usd"] == 50.0
    assert capped["consent"]["detail"] == "machine run --budget 50"
    assert uncapped["budget_usd"] is None
    assert uncapped["consent"]["detail"] == "machine run --budget none"


def test_a_finished_command_that_spent_nothing_still_writes_its_line(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    ok(invoke("run", "greet", "hello you", "--harness", "echo", "--workspace", ws.root))
    [line] = log_lines(ws)
    assert line["spent_usd"] == 0.0 and line["tool"] == "run"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "nosuch", "hi"],  # unknown machine, after the workspace is built
        ["run", "greet", "hi", "--budget", "lots"],  # a bad budget, before
        ["suite", "greet", "--cases", "missing.json"],  # no such cases file
        ["run", "greet", "hi", "--continue"],  # --continue with an INPUT
    ],
)
def test_a_command_that_fails_with_bad_input_writes_nothing(
    ws: WorkspaceFolder, invoke: Invoke, args: list[str]
) -> None:
    result = invoke(*args, *costly(ws))
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr
    assert not log_path(ws).exists()


def test_a_command_that_fails_after_spending_still_logs_what_it_spent(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from machine import BadInputError
    from machine.cli import _runs  # the command's renderer, made to fail on purpose

    def fail(*_args: object, **_kwargs: object) -> None:
        raise BadInputError("the terminal went away")

    monkeypatch.setattr(_runs, "print_run", fail)  # fails after the run has spent
    result = invoke("run", "greet", "greet ann", *costly(ws))
    assert result.exit_code == 2 and "the terminal went away" in result.stderr
    [line] = log_lines(ws)
    assert line["spent_usd"] == pytest.approx(RUN_COST)


def test_commands_that_cannot_spend_write_nothing(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("run", "greet", "greet ann", *costly(ws)))
    ok(invoke("runs", "greet", "--workspace", ws.root))
    ok(invoke("list", "--workspace", ws.root))
    assert len(log_lines(ws)) == 1


def test_the_installed_command_writes_the_line(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    """The real console script, in its own process, with the workspace from the environment."""
    done = machine_cmd(
        "run",
        "greet",
        "greet ann",
        "--harness",
        "scripted",
        "--script",
        ws.costly_script,
        env={"MACHINE_WORKSPACE": str(ws.root)},
    )
    assert done.returncode == 0, done.stderr
    [line] = log_lines(ws)
    assert (line["tool"], line["machine"], line["consent"]["how"]) == ("run", "greet", "command")
    assert line["spent_usd"] == pytest.approx(RUN_COST)
