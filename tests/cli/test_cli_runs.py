"""``machine run``, ``runs`` and ``eval`` on the test workspace."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result
from helpers.cli_workspace import RAISING_CHECK

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]
SUMMARY_KEYS = {"id", "created_at", "status", "score", "passed", "cost_usd", "case_id", "model"}


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def scripted(ws: WorkspaceFolder) -> list[str]:
    return ["--harness", "scripted", "--script", str(ws.script), "--workspace", str(ws.root)]


def costly(ws: WorkspaceFolder) -> list[str]:
    """The script whose every turn uses 100,000 input tokens: $0.186 at the machine's model."""
    return ["--harness", "scripted", "--script", str(ws.costly_script), "--workspace", str(ws.root)]


# --- run ----------------------------------------------------------------------------------------


def test_run_with_echo(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke("run", "greet", "hello you", "--harness", "echo", "--workspace", ws.root))
    assert "hello you" in result.stdout
    assert "via echo" in result.stdout
    assert "spent $0.0000" in result.stderr
    assert "✓" not in result.stdout  # not graded without --eval
    assert ws.count() == 1


def test_run_with_a_script_shows_the_tool_call_and_reply(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("run", "greet", "greet ann", *scripted(ws))).stdout
    assert '→ shout({"text": "hello ann"})' in out
    assert "← HELLO ANN" in out
    assert "hello ann" in out.splitlines()
    assert "via scripted" in out


def test_run_eval_prints_the_scorecard(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("run", "greet", "greet bob", "--eval", *scripted(ws))).stdout
    assert "✓ greets (×2, check:says_hello): 1.00" in out
    assert "✗ brief (×1, check:at_most_20): 0.50" in out
    assert "? warm (×1, judge:thinkingmachines/Inkling-Small): UNSCORED" in out
    # (2 + 0.5 + 1) / 4 even with full marks on warm: a fail that warm's grade cannot turn
    assert (
        "score 0.83 → FAIL on 3 of 4 weight; warm unscored: a fail whatever it scores (pass score 1)" in out
    )


def test_run_eval_with_pass_score(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("run", "greet", "greet bob", "--eval", "--pass-score", "0.5", *scripted(ws))).stdout
    # (2 + 0.5) / 4 even with warm at 0: a pass that warm's grade cannot turn
    assert (
        "score 0.83 → PASS on 3 of 4 weight; warm unscored: a pass whatever it scores (pass score 0.5)" in out
    )


def test_a_partly_unscored_run_is_never_a_plain_pass(ws: WorkspaceFolder, invoke: Invoke) -> None:
    """ann scores 1.00 on the 3 of 4 weight that was measured; warm (a judge with no model here) could
    still fail it, so the run says what was not measured and its JSON's passed is null, not true."""
    out = ok(invoke("run", "greet", "greet ann", "--eval", *scripted(ws))).stdout
    assert (
        "score 1.00 → PASS on 3 of 4 weight; warm unscored: undecided until it is scored (pass score 1)"
        in out
    )
    assert "→ PASS (" not in out
    ran = as_json(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))
    assert ran["score"] == 1.0 and ran["passed"] is None and ran["scorecard"]["passed"] is None
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert [row["passed"] for row in listed] == [None, None]
    assert "undecided" in ok(invoke("runs", "greet", "--workspace", ws.root)).stdout


def test_a_check_that_raises_is_named_with_its_line_and_leaves_the_run_undecided(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's run: a weight-2 check raised KeyError and the judge was offline, so 1 of 4 weight was
    measured: the scorecard names the exception and the line of the person's check, and claims no PASS."""
    ws.write("machines/greet/machine.py", RAISING_CHECK)
    monkeypatch.chdir(ws.root)
    out = ok(invoke("run", "greet", "greet ann", "--eval", *scripted(ws))).stdout
    assert (
        "? greets (×2, check:says_hello): UNSCORED — check 'says_hello' raised KeyError: 'expected' at "
        "machines/greet/machine.py:7: a bug in the check" in out
    )
    assert "score 1.00 → PASS on 1 of 4 weight; greets, warm unscored: undecided until they are scored" in out
    ran = as_json(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))
    assert ran["passed"] is None
    assert ran["scorecard"]["criteria"]["greets"]["details"] == {
        "raised": "KeyError",
        "at": "machines/greet/machine.py:7",
    }


def test_run_json_is_one_run_object(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))
    data = json.loads(result.stdout)  # nothing else on stdout
    assert isinstance(data, dict)
    assert {
        "id",
        "machine",
        "status",
        "output",
        "scorecard",
        "trajectory",
        "usage",
        "cost_usd",
        "model",
        "harness",
        "input",
        "library_version",
        "revision",
        "tags",
    } <= set(data)
    assert data["machine"] == "greet"
    assert data["status"] == "ok"
    assert data["output"] == "hello ann"
    assert data["input"] == "greet ann"
    assert data["harness"] == "scripted"
    assert data["model"] == "Qwen/Qwen3.8-27B"
    assert data["scorecard"]["criteria"]["greets"]["score"] == 1.0
    assert data["scorecard"]["criteria"]["warm"]["score"] is None
    assert [m["role"] for m in data["trajectory"]] == ["user", "assistant", "tool", "assistant"]
    assert "spent $" in result.stderr
    stored = ws.get(data["id"])
    assert stored.scorecard is not None
    assert stored.output == "hello ann"


def test_run_json_says_created_at_as_runs_json_does(ws: WorkspaceFolder, invoke: Invoke) -> None:
    """The break: `runs --json` gave each run's `created_at`, and `run --json` of the same run had none."""
    ran = as_json(invoke("run", "greet", "greet ann", "--json", *scripted(ws)))
    [listed] = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert ran["created_at"] == ran["timings"]["started_at"] == listed["created_at"]
    shown = as_json(invoke("show-run", ran["id"], "--json", "--workspace", ws.root))
    assert shown["created_at"] == ran["created_at"]


def test_run_and_eval_json_carry_the_weighted_score_and_passed(ws: WorkspaceFolder, invoke: Invoke) -> None:
    """Wherever a scorecard appears, its dump says the weighted score and whether it passed: the run's and
    the scorecard's, from ``run --json`` and from ``eval --json`` alike."""
    ran = as_json(invoke("run", "greet", "greet bob", "--eval", "--json", *scripted(ws)))
    # greets (x2) 1.0, brief (x1) 0.5, warm UNSCORED: (2 * 1 + 1 * 0.5) / 3
    assert ran["score"] == pytest.approx(2.5 / 3) and ran["passed"] is False
    assert ran["scorecard"]["score"] == ran["score"] and ran["scorecard"]["passed"] is False
    graded = as_json(
        invoke("eval", "greet", ran["id"], "--pass-score", "0.8", "--json", "--workspace", ws.root)
    )
    assert graded["id"] == ran["id"]
    # at 0.8 warm decides it: 2.5 / 4 with warm at 0, 3.5 / 4 at full marks, so it is undecided
    assert graded["score"] == pytest.approx(2.5 / 3) and graded["passed"] is None
    assert graded["scorecard"]["score"] == graded["score"] and graded["scorecard"]["passed"] is None
    assert graded["scorecard"]["pass_score"] == 0.8
    lenient = as_json(
        invoke("eval", "greet", ran["id"], "--pass-score", "0.6", "--json", "--workspace", ws.root)
    )
    assert lenient["passed"] is True and lenient["scorecard"]["passed"] is True  # 2.5 / 4 reaches 0.6
    ungraded = as_json(invoke("run", "greet", "greet ann", "--json", *scripted(ws)))
    assert ungraded["score"] is None and ungraded["passed"] is None


def test_run_json_without_eval_has_no_scorecard(ws: WorkspaceFolder, invoke: Invoke) -> None:
    data = as_json(invoke("run", "greet", "greet ann", "--json", *scripted(ws)))
    assert data["scorecard"] is None
    assert ws.get(data["id"]).scorecard is None


def test_run_prints_what_it_spent(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke("run", "greet", "greet ann", "--json", *costly(ws)))
    data = json.loads(result.stdout)
    assert data["cost_usd"] == pytest.approx(0.186)
    assert data["usage"]["input_tokens"] == 100_000
    assert "spent $0.1860" in result.stderr
    assert "budget $1.00" in result.stderr


MODEL_IGNORED = (
    "--model is parsed (and used for --price-as) but never passed on: `run` calls ws.run(spec, input, ...) "
    "without model=, so the run uses the machine's model"
)


def test_run_with_model_and_price_as(ws: WorkspaceFolder, invoke: Invoke) -> None:
    model = ["--model", "someone/checkpoint", "--price-as", "Qwen/Qwen3.8-27B"]
    result = ok(invoke("run", "greet", "greet ann", *model, "--json", *costly(ws)))
    data = json.loads(result.stdout)
    assert data["model"] == "someone/checkpoint"
    assert data["cost_usd"] == pytest.approx(0.186)


def test_run_with_an_unpriced_model_under_a_budget_is_refused(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-never-sent")  # refused before any call is made
    priced = ["--harness", "openrouter", "--workspace", str(ws.root)]
    result = invoke("run", "greet", "greet ann", "--model", "someone/checkpoint", *priced)
    assert result.exit_code == 2
    assert "model 'someone/checkpoint' has no known price" in result.stderr
    assert "--price-as" in result.stderr
    assert ws.count() == 0


def test_a_replay_at_an_unpriced_model_costs_nothing(ws: WorkspaceFolder, invoke: Invoke) -> None:
    """The scripted harness is free: its usage is charged at the model's price, and a model with none
    (a scripted teacher) runs under a budget for nothing."""
    result = invoke("run", "greet", "greet ann", "--model", "teacher", *costly(ws))
    assert result.exit_code == 0, result.stderr
    assert "spent $0.0000" in result.stderr


def test_run_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("run", "greet", "greet ann", "--eval", *scripted(ws))
    assert done.returncode == 0, done.stderr
    assert "score 1.00 → PASS on 3 of 4 weight; warm unscored: undecided" in done.stdout
    assert "spent $0.0000" in done.stderr
    assert ws.count() == 1


def test_run_keep_sandbox(ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.root)  # in the workspace itself, each run gets a fresh sandbox
    data = as_json(invoke("run", "greet", "greet ann", "--keep-sandbox", "--json", *scripted(ws)))
    assert (ws.root / ".machine" / "sandboxes" / data["id"]).is_dir()
    data = as_json(invoke("run", "greet", "greet ann", "--json", *scripted(ws)))
    assert not (ws.root / ".machine" / "sandboxes" / data["id"]).exists()


# --- runs ---------------------------------------------------------------------------------------


def test_runs_json_newest_first_with_limit(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ids = [
        as_json(invoke("run", "greet", text, "--json", *scripted(ws)))["id"]
        for text in ("greet ann", "greet bob", "greet cat")
    ]
    ok(invoke("run", "plain", "not greet", "--harness", "echo", "--workspace", ws.root))
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert [r["id"] for r in listed] == ids[::-1]
    for row in listed:
        assert set(row) >= SUMMARY_KEYS  # a RunSummary's dump: these and the listing's other fields
        assert row["status"] == "ok"
        assert row["score"] is None and row["passed"] is None  # ungraded
        assert row["case_id"] is None
        assert row["model"] == "Qwen/Qwen3.8-27B"
        assert row["cost_usd"] == 0.0
    assert [r["created_at"] for r in listed] == sorted((r["created_at"] for r in listed), reverse=True)
    limited = as_json(invoke("runs", "greet", "--json", "--limit", "2", "--workspace", ws.root))
    assert [r["id"] for r in limited] == ids[:0:-1]


def test_runs_json_of_graded_and_failed_runs(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("run", "greet", "greet cat", "--eval", *scripted(ws)))
    assert invoke("run", "greet", "nobody matches this", "--eval", *scripted(ws)).exit_code == 1
    failed, graded = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert graded["score"] == pytest.approx(1 / 3)
    assert graded["passed"] is False
    assert failed["status"] == "error"
    assert failed["score"] is None


def test_runs_text(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke("runs", "greet", "--workspace", ws.root)).stdout
    assert "no runs of greet yet" in out
    run_id = as_json(invoke("run", "greet", "greet ann", "--eval", "--json", *scripted(ws)))["id"]
    out = ok(invoke("runs", "greet", "--workspace", ws.root)).stdout
    assert run_id in out
    assert "1.00" in out and "undecided" in out  # warm, UNSCORED, could still fail it
    assert "'greet ann'" in out


def test_runs_of_an_unknown_machine(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("runs", "nope", "--workspace", ws.root)
    assert result.exit_code == 2
    assert "there is no machine 'nope'" in result.stderr
    assert "greet, greet/loud, plain" in result.stderr


# --- eval ---------------------------------------------------------------------------------------


def test_eval_grades_a_stored_run_and_stores_the_scorecard(ws: WorkspaceFolder, invoke: Invoke) -> None:
    run_id = as_json(invoke("run", "greet", "greet bob", "--json", *scripted(ws)))["id"]
    assert ws.get(run_id).scorecard is None
    result = ok(invoke("eval", "greet", run_id, "--workspace", ws.root))
    assert "score 0.83 → FAIL" in result.stdout
    assert "spent $" in result.stderr
    stored = ws.get(run_id)
    assert stored.scorecard is not None
    assert stored.score == pytest.approx(2.5 / 3)
    assert ws.count() == 1  # the same row, graded
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert listed[0]["score"] == pytest.approx(2.5 / 3)


def test_eval_json_with_pass_score(ws: WorkspaceFolder, invoke: Invoke) -> None:
    run_id = as_json(invoke("run", "greet", "greet bob", "--json", *scripted(ws)))["id"]
    graded = as_json(invoke("eval", "greet", run_id, "--pass-score", "0.5", "--json", "--workspace", ws.root))
    assert graded["id"] == run_id
    assert graded["scorecard"]["pass_score"] == 0.5
    assert ws.get(run_id).passed is True


def test_eval_of_a_missing_run_names_it(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("run", "plain", "hi", "--harness", "echo", "--workspace", ws.root))
    result = invoke("eval", "greet", "20990101-000000-deadbeef", "--workspace", ws.root)
    assert result.exit_code == 2
    assert "there is no run '20990101-000000-deadbeef'" in result.stderr
    assert result.stdout == ""
    assert ws.count() == 1


def test_eval_of_another_machines_run_is_an_error(ws: WorkspaceFolder, invoke: Invoke) -> None:
    data = as_json(invoke("run", "plain", "hi", "--harness", "echo", "--json", "--workspace", ws.root))
    run_id = data["id"]
    result = invoke("eval", "greet", run_id, "--workspace", ws.root)
    assert result.exit_code == 2
    assert f"run {run_id} belongs to 'plain', not 'greet'" in result.stderr
    assert ws.get(run_id).scorecard is None


def test_eval_of_a_failed_run_is_refused(ws: WorkspaceFolder, invoke: Invoke) -> None:
    failing = invoke("run", "greet", "nobody matches this", "--json", *scripted(ws))
    assert failing.exit_code == 1  # stored and printed, and the exit status says it failed
    data = json.loads(failing.stdout)
    assert data["status"] == "error"
    result = invoke("eval", "greet", data["id"], "--workspace", ws.root)
    assert ws.get(data["id"]).scorecard is None
    assert result.exit_code == 2
    assert data["id"] in result.stderr
    assert "failed" in result.stderr


def test_eval_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("run", "plain", "hi", "--harness", "echo", "--json", "--workspace", ws.root)
    run_id = json.loads(done.stdout)["id"]
    done = machine_cmd("eval", "plain", run_id, "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert "score 1.00 → PASS" in done.stdout
    done = machine_cmd("eval", "plain", "no-such-run", "--workspace", ws.root)
    assert done.returncode == 2
    assert "no-such-run" in done.stderr
