"""The built-in optimizer machine: it loads in any workspace, even an empty one, a workspace's own
``machines/optimizer`` takes its place, and its graders say whether a reply is in shape."""

from __future__ import annotations

from pathlib import Path

from helpers.optimize import Keyed, block, make_shout

from machine import Run, Workspace, open_workspace
from machine.learn import optimize
from machine.learn.optimize import OPTIMIZER
from machine.machinist.machines.optimizer.machine import DEFAULT_MODEL, explains, proposes

OWN_OPTIMIZER = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"any": "Anything goes."})
machine = define_machine(
    name="optimizer",
    intent="Propose instructions, our way.",
    instructions="Our own way of proposing.",
    model="Qwen/Qwen3.6-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"any": check("any", lambda run: True)}),
)
"""


def test_the_built_in_optimizer_loads_in_an_empty_workspace(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert not (tmp_path / "machines").exists()
    spec = ws.load(OPTIMIZER)
    assert (spec.name, spec.model, DEFAULT_MODEL) == ("optimizer", "thinkingmachines/Inkling", spec.model)
    assert spec.max_steps == 1 and spec.tools == ()
    assert list(spec.rubric) == ["proposes", "explains"]
    assert spec.rubric["proposes"].weight == 3
    assert "between <instructions> and </instructions>" in spec.instructions
    assert "Never copy a case's input or expected answer" in spec.instructions
    assert Path(spec.source).parent.name == "optimizer"
    assert not (tmp_path / "machines").exists()  # nothing written into the workspace


def test_a_workspaces_own_optimizer_shadows_the_built_in_one(tmp_path: Path) -> None:
    folder = tmp_path / "machines" / "optimizer"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(OWN_OPTIMIZER, encoding="utf-8")
    spec = Workspace(tmp_path).load(OPTIMIZER)
    assert (spec.instructions, spec.model, list(spec.rubric)) == (
        "Our own way of proposing.",
        "Qwen/Qwen3.6-27B",
        ["any"],
    )


async def test_optimize_asks_the_workspaces_optimizer_on_the_model_given(tmp_path: Path) -> None:
    make_shout(tmp_path)
    folder = tmp_path / "machines" / "optimizer"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(OWN_OPTIMIZER, encoding="utf-8")
    harness = Keyed([block("Say it. ONE more."), block("Say it. ONE more, again.")])
    ws = open_workspace(tmp_path, harness=harness)
    first = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    assert (first.report.optimizer, first.report.optimizer_model) == ("optimizer", "Qwen/Qwen3.6-27B")
    second = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, optimizer_model=" tinker/x ")
    assert second.report.optimizer_model == "tinker/x"
    assert [(s.instructions, s.model) for s in harness.optimizer] == [
        ("Our own way of proposing.", "Qwen/Qwen3.6-27B"),
        ("Our own way of proposing.", "tinker/x"),
    ]


def reply(text: str) -> Run:
    return Run(machine="optimizer", model="m", harness="h", input="brief", output=text)


def test_the_optimizers_graders_read_the_shape_of_a_reply() -> None:
    one = reply("I made the rule general, for every input.\n<instructions>Shout.</instructions>")
    assert proposes(one) == (True, "one proposal")
    assert explains(one) == (True, "says what it changed")
    assert proposes(reply("Shout.")) == (False, "no non-empty <instructions> block in the reply")
    two = reply("<instructions>a</instructions><instructions>b</instructions>")
    assert proposes(two) == (False, "2 <instructions> blocks; one is asked for (the last was taken)")
    assert explains(two)[0] is False
