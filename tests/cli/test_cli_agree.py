"""``machine agree`` on the test workspace: text and JSON reports, UNSCORED candidates, errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

import machine.measure._agree  # where agree finds its judge, replaced on purpose
from machine import Criterion, CriterionScore, GradeContext, Run

if TYPE_CHECKING:
    from conftest import WorkspaceFolder

Invoke = Callable[..., Result]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def run_suite(ws: WorkspaceFolder, invoke: Invoke) -> None:
    """One run per case of greet: ann and bob say hello (greets 1), cat does not (greets 0)."""
    ok(
        invoke(
            "suite", "greet", "--harness", "scripted", "--script", ws.script, "--json", "--workspace", ws.root
        )
    )


def agree(ws: WorkspaceFolder, *args: str) -> list[str]:
    return ["agree", "greet", *args, "--workspace", str(ws.root)]


class ByOutput:
    """A stand-in judge: 0.9 for ann's reply, 0.4 for bob's, 0.1 for cat's."""

    kind = "judge"
    name = "stand-in"

    async def grade(self, run: Run, criterion: str, spec: Criterion, ctx: GradeContext) -> CriterionScore:
        score = 0.9 if "ann" in run.output else 0.4 if "bob" in run.output else 0.1
        return CriterionScore(
            criterion=criterion,
            weight=spec.weight,
            grader="judge:stand-in",
            score=score,
            reason=f"saw {run.output}",
        )


def test_text_report_with_figures(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_suite(ws, invoke)
    monkeypatch.setattr(machine.measure._agree, "judge", lambda **_: ByOutput())
    result = ok(invoke(*agree(ws, "greets", "--with", "judge")))
    out = result.stdout
    assert "greet · greets" in out and "check:says_hello" in out
    assert "3 graded runs: 3 stored reference grades reused" in out
    assert "compared on 3" in out
    lines = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.strip()[:4] in ("0.30", "0.50", "0.70")
    }
    assert lines["0.30"][1] == "100%" and lines["0.50"][1] == "67%" and lines["0.70"][1] == "67%"
    assert "unsure candidates (0.3 to 0.7): 1 of 3" in out
    assert (
        "disagreements (1):" in out and "(bob): reference 1.00, candidate 0.40 (disagree at 0.5, 0.7)" in out
    )
    assert "spent $" in result.stderr


def test_json_report_with_chosen_thresholds(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_suite(ws, invoke)
    monkeypatch.setattr(machine.measure._agree, "judge", lambda **_: ByOutput())
    data: Any = json.loads(
        ok(invoke(*agree(ws, "greets", "--with", "judge", "--threshold", "0.5", "--json"))).stdout
    )
    assert set(data) >= {
        "machine",
        "criterion",
        "reference",
        "candidate",
        "runs",
        "n",
        "candidate_unscored",
        "unscored_reasons",
        "unsure",
        "thresholds",
        "disagreements",
    }
    assert (data["n"], data["unsure"], data["candidate_unscored"]) == (3, 1, 0)
    (row,) = data["thresholds"]
    assert row["threshold"] == 0.5 and row["agreement"] == pytest.approx(2 / 3)
    assert row["false_fail_rate"] == pytest.approx(1 / 2) and row["false_pass_rate"] == 0.0
    assert row["kept_bad"] == [{"base_pass_rate": 0.1, "share": 0.0}, {"base_pass_rate": 0.5, "share": 0.0}]
    (disagreement,) = data["disagreements"]
    assert disagreement["case_id"] == "bob" and disagreement["candidate"] == 0.4
    assert disagreement["at"] == [0.5]


def test_unreachable_judge_makes_every_candidate_unscored(ws: WorkspaceFolder, invoke: Invoke) -> None:
    run_suite(ws, invoke)  # no TINKER_API_KEY here: the judge cannot be reached
    data = json.loads(
        ok(invoke(*agree(ws, "greets", "--with", "judge", "--judge-effort", "low", "--json"))).stdout
    )
    assert (data["runs"], data["n"], data["candidate_unscored"]) == (3, 0, 3)
    (reason,) = data["unscored_reasons"]
    assert reason["count"] == 3 and "TINKER_API_KEY" in reason["reason"]
    assert data["candidate"]["grader"].endswith("at low")
    assert all(row["agreement"] is None for row in data["thresholds"])
    text = ok(invoke(*agree(ws, "greets", "--with", "judge"))).stdout
    assert "3 candidate UNSCORED" in text and "candidate UNSCORED x3" in text
    assert "nothing to compare" in text


def test_jev_without_a_key_is_unscored(
    ws: WorkspaceFolder, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    run_suite(ws, invoke)
    data = json.loads(ok(invoke(*agree(ws, "brief", "--with", "jev", "--json"))).stdout)
    assert data["candidate_unscored"] == 3 and "TYPESAFE_API_KEY" in data["unscored_reasons"][0]["reason"]


def test_errors(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke(*agree(ws, "greets", "--with", "judge"))
    assert (
        result.exit_code == 2
        and "run a suite first" in result.stderr
        and "machine suite greet" in result.stderr
    )
    run_suite(ws, invoke)
    result = invoke(*agree(ws, "kindness", "--with", "judge"))
    assert result.exit_code == 2 and "its criteria are: greets, brief, warm" in result.stderr
    result = invoke(*agree(ws, "greets", "--with", "oracle"))
    assert result.exit_code == 2 and "oracle" in result.stderr
    result = invoke(*agree(ws, "greets"))
    assert result.exit_code == 2 and "--with" in result.stderr
    result = invoke(*agree(ws, "greets", "--with", "judge", "--judge-effort", "huge"))
    assert result.exit_code == 2 and "effort 'huge'" in result.stderr
