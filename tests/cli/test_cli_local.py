"""A ``local:`` model picks the local harness when no harness is named: given with ``--model``, or as the
machine's own model; a named harness still wins."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import Result
from helpers.cli_workspace import WorkspaceFolder
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.clients.local import _models as _local_models  # noqa: E402

if TYPE_CHECKING:
    from conftest import Command

Invoke = Callable[..., Result]

LOCAL_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="tiny",
    intent="Say something.",
    instructions="Say something.",
    model="local:MODEL",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: 1.0)}),
)
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    _local_models.forget()


@pytest.fixture(autouse=True)
def short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_LOCAL_MAX_TOKENS", "4")


def test_a_local_model_given_with_model_runs_on_the_local_harness(
    ws: WorkspaceFolder, invoke: Invoke, tiny: Path
) -> None:
    result = invoke(
        "run", "plain", "hi", "--model", f"local:{tiny}", "--budget", "0.01", "--json", "--workspace", ws.root
    )
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert (run["harness"], run["model"], run["cost_usd"]) == ("local", f"local:{tiny}", 0.0)
    assert run["usage"]["output_tokens"] >= 1


def test_a_machine_whose_model_is_local_runs_on_the_local_harness(
    ws: WorkspaceFolder, invoke: Invoke, tiny: Path
) -> None:
    ws.write("machines/tiny/machine.py", LOCAL_PY.replace("MODEL", str(tiny)))
    result = invoke("run", "tiny", "hi", "--json", "--workspace", ws.root)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["harness"] == "local"
    named = invoke("run", "tiny", "hi", "--harness", "echo", "--json", "--workspace", ws.root)
    assert json.loads(named.stdout)["harness"] == "echo"


@pytest.mark.slow
def test_loading_the_bundled_model_draws_no_bar_and_no_warning(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    pytest.importorskip("gguf")
    args = ["run", "plain", "hi", "--model", "local:smollm2-135m", "--budget", "0.01", "--workspace", ws.root]
    result = machine_cmd(*args, env={"MACHINE_LOCAL_MAX_TOKENS": "2"})
    assert result.returncode == 0, result.stderr
    assert "local:smollm2-135m via local" in result.stdout
    noise = ["%|", "it/s", "Converting", "de-quantizing", "Warning", "warn"]
    assert not [word for word in noise if word in result.stderr], result.stderr
    assert result.stderr.strip() == "spent $0.0000 of budget $0.01", result.stderr
