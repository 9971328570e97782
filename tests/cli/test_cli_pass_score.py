"""A pass score or minimum score outside [0, 1] is refused before anything runs, by every command and the
SDK alike: stored with the runs, 2 would fail every one and -1 pass every one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import pytest
from click.testing import Result

from machine import BadInputError, open_workspace

if TYPE_CHECKING:
    from conftest import WorkspaceFolder

Invoke = Callable[..., Result]


@pytest.mark.parametrize(
    "command",
    [
        ["run", "greet", "greet ann", "--eval"],
        ["suite", "greet"],
        ["compare", "greet", "HEAD"],
        ["train", "greet"],
        ["optimize", "greet"],
        ["export", "greet", "--out", "x.jsonl", "--min-score"],
    ],
)  # export takes no harness: a scripted one is given to the others, so nothing but the score is wrong
@pytest.mark.parametrize("score", ["2", "-0.5"])
def test_a_score_outside_0_1_is_refused(
    ws: WorkspaceFolder, invoke: Invoke, command: list[str], score: str
) -> None:
    flag = [] if command[0] == "export" else ["--pass-score"]
    harness = [] if command[0] == "export" else ["--harness", "scripted", "--script", ws.script]
    result = invoke(*command, *flag, score, *harness, "--workspace", ws.root)
    assert result.exit_code == 2, result.stdout
    assert "score" in result.stderr and "0" in result.stderr and "1" in result.stderr, result.stderr
    assert ws.count() == 0


def test_train_refuses_a_min_score_outside_0_1(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("train", "greet", "--min-score", "1.5", "--workspace", ws.root)
    assert result.exit_code == 2 and "--min-score" in result.stderr, result.stderr


def test_the_sdk_names_the_python_argument(ws: WorkspaceFolder) -> None:
    workspace = open_workspace(ws.root, harness="echo")
    with pytest.raises(BadInputError, match=r"pass_score 2 is not a score: give a number from 0 to 1"):
        anyio.run(lambda: workspace.run("greet", "greet ann", grade=True, pass_score=2))
    assert ws.count() == 0
