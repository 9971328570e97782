"""A workspace tells its watchers of every run it finishes and grades, its copies' runs too, in order."""

from __future__ import annotations

from pathlib import Path

from machine import Budget, Machine, check, define_evaluator, define_machine, define_rubric, open_workspace
from machine.clients.echo import EchoHarness
from machine.runs import Run


def greeter() -> Machine:
    rubric = define_rubric({"greets": "Says hello."})
    evaluator = define_evaluator(rubric, {"greets": check("says_hello", lambda run: "hello" in run.output)})
    said = {"intent": "Greet.", "instructions": "Say hello."}
    return define_machine(name="greet", model="echo", rubric=rubric, evaluator=evaluator, **said)


async def test_watchers_hear_each_run_finished_and_graded_and_can_leave(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    heard: list[tuple[str, str, float | None]] = []

    def watch(what: str, run: Run) -> None:
        heard.append((what, run.input, run.score))

    ws.watchers.append(watch)
    spec = greeter()
    await ws.run(spec, "hello", grade=True)
    plain = await ws.run(spec, "bye")
    await ws.using(budget=Budget(None)).grade(plain, spec)
    ws.watchers.remove(watch)
    await ws.run(spec, "unheard")
    assert heard == [
        ("graded", "hello", 1.0),
        ("finished", "hello", 1.0),
        ("finished", "bye", None),
        ("graded", "bye", 0.0),
    ]
