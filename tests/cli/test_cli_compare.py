"""``machine compare`` on the test workspace made a git repository: the text report, the JSON shape,
the notes (unchanged machine, changed rubric) and the errors. The scripted harness replays by input,
so both versions behave the same here; the exact differences are shown in tests/core/test_compare.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result
from helpers.git import git

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]

# What the script makes of each case of greet (see conftest): ann passes, bob scores (2 + 0.5) / 3, cat 1 / 3.
SCORES = {"ann": 1.0, "bob": 2.5 / 3, "cat": 1 / 3}


def committed(ws: WorkspaceFolder) -> str:
    (ws.root / ".gitignore").write_text(".machine/\n__pycache__/\n", encoding="utf-8")
    git(ws.root, "init", "-q")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "greet")
    return git(ws.root, "rev-parse", "HEAD").strip()


def compare(ws: WorkspaceFolder, *args: str) -> list[str]:
    return [
        "compare",
        "greet",
        *args,
        "--harness",
        "scripted",
        "--script",
        str(ws.script),
        "--workspace",
        str(ws.root),
    ]


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_compare_json_shape_for_an_unchanged_machine(ws: WorkspaceFolder, invoke: Invoke) -> None:
    head = committed(ws)
    result = ok(invoke(*compare(ws, "--trials", "2", "--concurrency", "3", "--json")))
    report: Any = json.loads(result.stdout)
    assert {"a", "b", "diff", "se", "z", "cases", "unscored", "errors"} <= set(report)
    mean = sum(SCORES.values()) / 3
    for side in ("a", "b"):
        assert {"mean", "pass_rate"} <= set(report[side])
        assert report[side]["mean"] == pytest.approx(mean)
        assert report[side]["pass_rate"] == 0.0  # bob and cat fail; ann waits on warm, UNSCORED
        assert report[side]["undecided"] == 2
    assert report["diff"] == 0.0 and report["se"] == 0.0 and report["z"] is None
    assert report["cases"] == 3
    assert report["unscored"] == 12  # the judge criterion, once a run: 3 cases x 2 trials x 2 versions
    assert report["unmeasured"] == {"warm": ["A", "B"]}
    assert report["verdict"].startswith("Not measured: criterion 'warm' has no scored grade")
    warm = report["a"]["criteria"]["warm"]
    assert (warm["runs"], warm["unscored"], warm["mean"]) == (0, 6, None)
    [why] = report["a"]["unscored_reasons"]["warm"]
    assert why["count"] == 6 and why["reason"].startswith("the judge call failed:")
    assert report["a"]["unmeasured"] == ["warm"] and report["b"]["criteria"]["greets"]["runs"] == 6
    assert report["errors"] == 0
    assert report["unchanged"] is True and report["rubric_changed"] is False
    assert report["ref"] == "HEAD" and report["commit"] == head
    assert report["a"]["revision"] == head and report["b"]["revision"] == head
    assert ws.count() == 12
    assert "spent $0.0000" in result.stderr


def test_compare_text_says_unchanged_first_and_what_the_difference_means(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    committed(ws)
    out = ok(invoke(*compare(ws, "--trials", "2"))).stdout
    assert out.index("has not changed since HEAD") < out.index("A HEAD")
    assert "A HEAD" in out and "B working tree" in out
    assert "mean 0.72, pass rate 0% of decided runs (2 runs undecided: an unscored criterion could" in out
    assert "B - A: +0.000, standard error 0.000 over 3 cases" in out
    # greet's judge criterion "warm" is UNSCORED on every run here (no Tinker key): nothing to compare on it
    assert re.search(r"\n  warm +- -> - +NOT MEASURED on A and B\n      6 UNSCORED on A, most often:\n", out)
    assert "        6x the judge call failed:" in out and "TINKER_API_KEY" in out
    assert "  greets  0.67 -> 0.67\n" in out
    assert "Not measured: criterion 'warm' has no scored grade on A (HEAD) (6 UNSCORED)" in out
    assert "no difference at all" not in out and "within about two standard errors" not in out


def test_compare_text_of_a_machine_measured_on_every_criterion(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("plain.json", json.dumps([{"id": "a", "input": "hi"}, {"id": "b", "input": "hi you"}]))
    committed(ws)
    args = compare(ws, "--cases", str(ws.root / "plain.json"))
    out = ok(invoke(*[("plain" if a == "greet" else a) for a in args])).stdout
    assert "criteria (mean A -> B):\n  nonempty  1.00 -> 1.00\n" in out
    assert "UNSCORED on" not in out and "NOT MEASURED" not in out
    assert "no difference at all" in out
    assert "two standard errors" not in out  # said only of a result within them


def test_compare_notes_a_changed_rubric(ws: WorkspaceFolder, invoke: Invoke) -> None:
    committed(ws)
    rubric = ws.machines / "greet" / "rubric.py"
    rubric.write_text(rubric.read_text().replace("at most 20", "at most 25"), encoding="utf-8")
    out = ok(invoke(*compare(ws))).stdout
    assert "the rubric changed since HEAD" in out
    assert "changed since HEAD: rubric" in out
    report = json.loads(ok(invoke(*compare(ws, "--json"))).stdout)
    assert report["rubric_changed"] is True and report["unchanged"] is False


def test_compare_refuses_a_ref_that_does_not_exist(ws: WorkspaceFolder, invoke: Invoke) -> None:
    committed(ws)
    result = invoke(*compare(ws, "--ref", "v9"))
    assert result.exit_code == 2
    assert "git revision 'v9' does not exist" in result.stderr
    assert result.stdout == ""


def test_compare_outside_git_is_a_clear_error(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd(*compare(ws, "--json"))
    assert done.returncode == 2, done.stderr
    assert "is not in a git repository" in done.stderr
    assert done.stdout == ""
