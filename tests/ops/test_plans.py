"""A learning call's plan, made before anything is spent and the same on every face: the most runs it can
make (counted from the options and the machine's cases), its steps where they are known, the harness its
runs use and its budget as the price bound."""

from __future__ import annotations

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
