"""A learning call's plan, made before anything is spent and the same on every face: the most runs it can
make (counted from the options and the machine's cases), its steps where they are known, the harness its
runs use and its budget as the price bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.optimize import CASES, HOLDOUT, make_shout
from helpers.training import HELD_OUT, TRAIN_CASES, make_caps

import machine
from machine import BadInputError
from machine.cli import cli
from machine.learn import OptimizeOptions
from machine.ops import open_workspace, plan_learning


def test_optimize_counts_every_arm_on_both_sides_and_the_optimizers_runs(tmp_path: Path) -> None:
    make_shout(tmp_path)
    ws = open_workspace(tmp_path, budget=2.5)
    plan = plan_learning(ws, "optimize", "shout", OptimizeOptions(trials=2, rounds=3, candidates=2))
    cases = len(CASES) + len(HOLDOUT)
    assert plan.runs == 2 * cases * (1 + 3 * 2) + 3 * 2 * 3  # the live arm and six proposals; 3 asks each
    assert (plan.steps, plan.price_bound_usd, plan.operation, plan.machine) == (6, 2.5, "optimize", "shout")
    said = plan.describe()
    assert said.startswith("optimize 'shout' on the ") and said.endswith("at most $2.50")


def test_train_counts_its_samples_and_the_held_out_comparison(tmp_path: Path) -> None:
    make_caps(tmp_path)
    ws = open_workspace(tmp_path, harness="echo")
    plan = plan_learning(ws, "train", "caps", samples=3, trials=2)
    assert plan.runs == 3 * len(TRAIN_CASES) + 2 * 2 * len(HELD_OUT)
    assert plan.steps is None and "counted once the examples are selected" in plan.steps_are
    assert plan.harness == "echo" and plan.price_bound_usd is None
    resumed = plan_learning(ws, "train", "caps", samples=3, trials=2, resume="t-1")
    assert resumed.runs == 2 * 2 * len(HELD_OUT)  # a resumed training samples nothing again


def test_specialize_counts_the_authors_tries_and_batches(tmp_path: Path) -> None:
    make_shout(tmp_path)
    ws = open_workspace(tmp_path)
    plan = plan_learning(ws, "specialize", "shout", focus="names", cases=8, retries=1)
    assert plan.runs == 2 + 1 + (2 * 2 + 1)  # two tries, the topics, five batches of four
    assert plan_learning(ws, "specialize", "shout", focus="names", reuse_cases=True).runs == 3
    assert plan_learning(ws, "draft-rubric", "shout", retries=0).runs == 1


def test_bad_options_and_operations_are_refused_by_name(tmp_path: Path) -> None:
    make_shout(tmp_path)
    ws = open_workspace(tmp_path)
    with pytest.raises(BadInputError, match="trials must be a whole number from 1 to 20, got 0"):
        plan_learning(ws, "optimize", "shout", trials=0)
    unknown = "no learning operation 'distill' to plan; they are: optimize, train"
    with pytest.raises(BadInputError, match=unknown):
        plan_learning(ws, "distill", "shout")


def test_the_handle_and_the_command_give_the_same_plan(tmp_path: Path) -> None:
    make_shout(tmp_path)
    handle = machine.load("shout", workspace=tmp_path, harness="echo", budget=1)
    plan = handle.plan("optimize", trials=1, rounds=1, candidates=1)
    args = ["optimize", "shout", "--trials", "1", "--rounds", "1", "--candidates", "1", "--budget", "1"]
    done = CliRunner().invoke(cli, [*args, "--harness", "echo", "--workspace", str(tmp_path), "--json"])
    [line] = [line for line in done.stderr.splitlines() if line.startswith("plan: ")]
    assert line == f"plan: {plan.describe()}"
    # the break: "1 trials of ... cases" and "(1 rounds of 1)": every count agrees with its noun
    assert f"(1 trial of {len(CASES) + len(HOLDOUT)} cases for the live version and each proposal" in line
    assert "up to 3 optimizer runs a proposal), 1 proposal (1 round of 1);" in line


THIN = "no candidate can pass the gate: holdout.json holds only 4 held-out cases, and at min_z 2"


def test_a_plan_on_four_held_out_cases_says_the_gate_cannot_pass_before_anything_is_spent(
    tmp_path: Path,
) -> None:
    make_caps(tmp_path, holdout=HELD_OUT[:4])
    ws = open_workspace(tmp_path, harness="echo", budget=1)
    trained = plan_learning(ws, "train", "caps", samples=1)
    proposed = plan_learning(ws, "propose", "caps", model="thinkingmachines/Inkling-2", trials=2)
    optimized = plan_learning(ws, "optimize", "caps")
    for plan in (trained, proposed):
        [warning] = plan.warnings
        assert warning.startswith(THIN) and "needs at least 6 cases that change" in warning
        assert plan.describe().endswith(f"; at most $1.00. Warning: {warning}")
        assert plan.describe(warnings=False).endswith("; at most $1.00")
    assert proposed.runs == 2 * 2 * 4 and proposed.runs_are == "2 trials of 4 held-out cases on each side"
    # optimize keeps a proposal only past the gate on the cases shown too: three are fewer than six
    shown, held = optimized.warnings
    assert shown.startswith("no proposal can be kept: cases.json holds only 3 cases, and at min_z 2")
    assert held.startswith("no proposal can be kept unless the live version already scores the maximum")
    assert "holdout.json holds only 4 held-out cases" in held
    assert ws.budget.spent == 0 and list(ws.store.iter_runs("caps")) == []  # said before any run


def test_the_warning_follows_min_z_and_goes_once_there_are_enough_held_out_cases(tmp_path: Path) -> None:
    make_caps(tmp_path, holdout=HELD_OUT[:4])
    ws = open_workspace(tmp_path, harness="echo")
    assert plan_learning(ws, "train", "caps", min_z=1).warnings == []  # 3 cases that change do at min_z 1
    assert "at min_z 3 " in plan_learning(ws, "train", "caps", min_z=3).warnings[0]
    (tmp_path / "machines" / "caps" / "holdout.json").write_text(json.dumps(HELD_OUT), encoding="utf-8")
    assert plan_learning(ws, "train", "caps").warnings == []  # six: a checkpoint right on all passes


def test_the_handle_gives_the_plan_with_its_warnings(tmp_path: Path) -> None:
    make_caps(tmp_path, holdout=HELD_OUT[:4])
    handle = machine.load("caps", workspace=tmp_path, harness="echo", budget=1)
    plan = handle.plan("propose", model="thinkingmachines/Inkling-2")
    assert plan.warnings[0].startswith(THIN)
    assert plan.model_dump(mode="json")["warnings"] == plan.warnings  # the JSON plan carries them
