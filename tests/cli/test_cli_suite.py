"""``machine suite`` on the test workspace: per-case means and pass^N, failures, budgets, options."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result
from helpers.cli_workspace import RAISING_CHECK

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]

# What the script makes of each case of greet (see conftest): ann 1.0, bob (2 + 0.5) / 3, cat 1 / 3 on what is
# scored; warm (a judge with no model here) is UNSCORED, so ann's full marks are undecided (warm could fail
# it) while bob and cat fail whatever warm scores.
SCORES = {"ann": 1.0, "bob": 2.5 / 3, "cat": 1 / 3}
RUN_COST = 100_000 * 1.86 / 1_000_000  # one turn of the costly script at Qwen3.8-27B's input price


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def suite(ws: WorkspaceFolder, *args: str, costly: bool = False) -> list[str]:
    """``machine suite greet ARGS`` with the scripted harness; ``costly`` turns cost $0.186 each."""
    script = ws.costly_script if costly else ws.script
    return [
        "suite",
        "greet",
        *args,
        "--harness",
        "scripted",
        "--script",
        str(script),
        "--workspace",
        str(ws.root),
    ]


def test_suite_json_shape_means_and_passes(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke(*suite(ws, "--trials", "3", "--concurrency", "2", "--json")))
    report = json.loads(result.stdout)
    assert report["machine"] == "greet"
    assert [c["case_id"] for c in report["cases"]] == ["ann", "bob", "cat"]
    for case in report["cases"]:
        # the break: "id" here, where every other JSON (runs, show-run, the dashboard) says case_id
        assert set(case) == {"case_id", "trials", "mean", "passes", "undecided", "scores", "runs"}
        assert case["trials"] == 3 and len(set(case["runs"])) == 3  # the ids show-run takes
        assert case["scores"] == pytest.approx([SCORES[case["case_id"]]] * 3)
        assert case["mean"] == pytest.approx(SCORES[case["case_id"]])
    passes = {c["case_id"]: (c["passes"], c["undecided"]) for c in report["cases"]}
    assert passes == {"ann": (0, 3), "bob": (0, 0), "cat": (0, 0)}  # ann's passes wait on warm
    summary = report["summary"]
    assert {"runs", "mean", "pass_rate", "undecided", "unscored", "errors", "cost_usd"} <= set(summary)
    assert summary["runs"] == 9
    assert summary["mean"] == pytest.approx(sum(SCORES.values()) / 3)
    assert summary["pass_rate"] == 0.0  # of the 6 decided runs: neither pass nor fail counts ann's
    assert summary["undecided"] == 3
    assert summary["unscored"] == 9  # the judge criterion, once a run
    assert summary["errors"] == 0
    assert summary["cost_usd"] == 0.0
    assert report["stopped"] is None
    assert "spent $0.0000" in result.stderr


def test_suite_stores_every_run_with_case_and_trial(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke(*suite(ws, "--trials", "3", "--concurrency", "2", "--json")))
    assert ws.count() == 9
    listed = as_json(invoke("runs", "greet", "--json", "--limit", "100", "--workspace", ws.root))
    assert Counter(r["case_id"] for r in listed) == {"ann": 3, "bob": 3, "cat": 3}
    assert all(r["score"] is not None for r in listed)
    runs = [ws.get(r["id"]) for r in listed]
    assert sorted((r.case_id, r.trial) for r in runs) == sorted((c, t) for c in SCORES for t in range(3))


def test_pass_score_changes_passes(ws: WorkspaceFolder, invoke: Invoke) -> None:
    report = as_json(invoke(*suite(ws, "--trials", "2", "--pass-score", "0.5", "--json")))
    # at 0.5 ann (3 / 4) and bob (2.5 / 4) pass with warm at 0; cat (1 / 4, 2 / 4 at best) waits on warm
    assert {c["case_id"]: c["passes"] for c in report["cases"]} == {"ann": 2, "bob": 2, "cat": 0}
    assert report["summary"]["pass_rate"] == 1.0 and report["summary"]["undecided"] == 2


def test_suite_text_report(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke(*suite(ws, "--trials", "2")))
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["case", "mean", "pass^N", "notes"]
    assert lines[1].split() == ["ann", "1.00", "0/2", "2", "unscored", "grades,", "2", "undecided"]
    assert lines[2].split()[:3] == ["bob", "0.83", "0/2"]
    assert lines[3].split()[:3] == ["cat", "0.33", "0/2"]
    assert (
        "greet: 6 runs, mean 0.72, pass rate 0% of decided runs (2 runs undecided: an unscored criterion "
        "could turn them), 6 unscored grades, 0 failed runs" in result.stdout
    )
    assert "stopped early" not in result.stdout


def test_verbose_prints_each_run(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ok(invoke(*suite(ws, "--trials", "2", "-v"))).stdout
    heads = [line for line in out.splitlines() if line.startswith("[")]
    assert len(heads) == 6
    assert [h.split(":")[0].split("] ")[0] for h in heads] == [f"[{n}/6" for n in range(1, 7)]
    assert sum("case ann" in h and h.endswith("1.00 undecided") for h in heads) == 2
    assert sum("case cat" in h and h.endswith("0.33 FAIL") for h in heads) == 2
    assert "    greets: 0.00" in out  # what fell short, under each run
    assert "greet: 6 runs" in out


def test_cases_file_beside_the_machine_or_anywhere(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write_json("machines/greet/few.json", [{"id": "only-ann", "input": "greet ann"}])
    report = as_json(invoke(*suite(ws, "--cases", "few.json", "--json")))
    assert [c["case_id"] for c in report["cases"]] == ["only-ann"]
    elsewhere = ws.write_json("elsewhere/more.json", {"cases": [{"id": 1, "input": "greet cat"}]})
    report = as_json(invoke(*suite(ws, "--cases", str(elsewhere), "--trials", "2", "--json")))
    assert len(report["cases"][0].pop("runs")) == 2
    assert report["cases"] == [
        {
            "case_id": "1",
            "trials": 2,
            "mean": pytest.approx(1 / 3),
            "passes": 0,
            "undecided": 0,
            "scores": pytest.approx([1 / 3] * 2),
        }
    ]


def test_harness_failure_is_a_failed_run_counted_apart(ws: WorkspaceFolder, invoke: Invoke) -> None:
    # No rule of the script matches "greet zed": the scripted harness raises HarnessError inside the run.
    ws.write_json(
        "machines/greet/with-zed.json",
        [{"id": "ann", "input": "greet ann"}, {"id": "zed", "input": "greet zed"}],
    )
    result = ok(invoke(*suite(ws, "--cases", "with-zed.json", "--trials", "2", "--json")))
    report = json.loads(result.stdout)
    zed = next(c for c in report["cases"] if c["case_id"] == "zed")
    assert len(zed.pop("runs")) == 2  # failed runs are stored, and named, too
    assert zed == {"case_id": "zed", "trials": 2, "mean": None, "passes": 0, "undecided": 0, "scores": []}
    assert report["summary"]["runs"] == 4
    assert report["summary"]["errors"] == 2
    assert report["summary"]["mean"] == pytest.approx(1.0)  # zed's failures are not zeros
    assert report["summary"]["pass_rate"] is None  # ann's runs wait on warm; zed's failed
    assert ws.count() == 4
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    failed = [ws.get(r["id"]) for r in listed if r["status"] == "error"]
    assert len(failed) == 2
    assert all(
        r.case_id == "zed" and r.error and "no rule" in r.error and "greet zed" in r.error for r in failed
    )


def test_harness_failure_in_text_and_verbose_output(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write_json("machines/greet/with-zed.json", [{"id": "zed", "input": "greet zed"}])
    out = ok(invoke(*suite(ws, "--cases", "with-zed.json", "-v"))).stdout
    assert "case zed trial 0: ERROR" in out
    assert "no rule" in out
    assert "1 failed" in out
    assert "1 failed run," in out


def test_budget_stops_scheduling(ws: WorkspaceFolder, invoke: Invoke) -> None:
    args = suite(ws, "--trials", "3", "--concurrency", "2", "--budget", "0.0001", "--json", costly=True)
    result = ok(invoke(*args))
    report = json.loads(result.stdout)
    runs = report["summary"]["runs"]
    assert 1 <= runs < 9
    assert report["stopped"] is not None
    assert "budget" in report["stopped"]
    assert report["summary"]["cost_usd"] == pytest.approx(runs * RUN_COST)
    assert ws.count() == runs
    assert "spent $" in result.stderr


def test_budget_stop_is_reported_in_text(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke(*suite(ws, "--trials", "3", "--budget", "0.0001", costly=True)))
    assert "stopped early: the budget of $0.0001 is spent" in result.stdout
    # the break: "give budget USD larger than that", where the flag could be pasted
    assert "; pass --budget USD larger than that to go on\n" in result.stdout
    assert "give budget" not in result.stdout


def test_budget_none_runs_everything(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = ok(invoke(*suite(ws, "--trials", "3", "--budget", "none", "--json", costly=True)))
    report = json.loads(result.stdout)
    assert report["summary"]["runs"] == 9
    assert report["stopped"] is None
    assert report["summary"]["cost_usd"] == pytest.approx(9 * RUN_COST)
    assert "of no cap" in result.stderr


SUITE_MODEL_IGNORED = (
    "--model is never passed on: `suite` calls run_suite(...) without model=, "
    "so every run uses the machine's model"
)


def test_suite_with_model_and_price_as(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke(*suite(ws, "--model", "someone/checkpoint", "--price-as", "Qwen/Qwen3.8-27B", "--json")))
    listed = as_json(invoke("runs", "greet", "--json", "--workspace", ws.root))
    assert {r["model"] for r in listed} == {"someone/checkpoint"}


def test_suite_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd(*suite(ws, "--trials", "3", "--concurrency", "2", "--json"))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["runs"] == 9
    assert {c["case_id"]: c["undecided"] for c in report["cases"]} == {"ann": 3, "bob": 0, "cat": 0}
    assert "spent $" in done.stderr


def test_budget_stop_through_the_console_script(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd(*suite(ws, "--trials", "3", "--concurrency", "2", "--budget", "0.0001", costly=True))
    assert done.returncode == 0, done.stderr
    assert "stopped early" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_check_that_raises_is_named_with_its_line_in_the_summary(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that raised on every run leaves its criterion out of every score: the summary names the
    exception and the line of the person's check, and counts no run as passed on the rest."""
    ws.write("machines/greet/machine.py", RAISING_CHECK)
    monkeypatch.chdir(ws.root)
    out = ok(invoke(*suite(ws, "--trials", "2"))).stdout
    assert (
        "greets: its check raised KeyError at machines/greet/machine.py:7 on 6 runs, so it was not measured "
        "there; fix the check" in out
    )
    assert "no run decided (6 runs undecided: an unscored criterion could turn them)" in out  # 1 of 4 weight
    report = as_json(invoke(*suite(ws, "--json")))
    assert report["criteria"]["greets"]["raised"] == {"KeyError at machines/greet/machine.py:7": 3}
    assert report["summary"]["pass_rate"] is None and report["summary"]["undecided"] == 3
