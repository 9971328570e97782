"""julia: writes a Julia program and runs it with run_julia in the isolated sandbox.

The parent of a family: julia/parametric, julia/generic, julia/fast and julia/inline keep these
criteria and each adds a specialty checked on the program's source (see program.py and source.py).
Whether the program ran is checked from run_julia's real result; whether it does the task and is
idiomatic Julia takes judgement.
"""

from __future__ import annotations

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from
from machine.sandboxes.tools import edit_file, list_files, read_file, write_file

from ..coder.steps import Step, exit_code, passed, steps
from .program import TOOL
from .rubric import rubric
from .run_julia import run_julia


def _what(step: Step) -> str:
    path = step.argument("path")
    return path if isinstance(path, str) and path else "a snippet"


def runs(run: Run) -> tuple[bool, str]:
    """Some run_julia call exited 0."""
    calls = [s for s in steps(run) if s.name == TOOL]
    if not calls:
        return False, "never called run_julia"
    for step in calls:
        if passed(step):
            return True, f"run_julia ran {_what(step)} and it exited 0"
    last = calls[-1]
    if not last.ok:
        first_line = last.text.strip().splitlines()[0] if last.text.strip() else "no result"
        return False, f"run_julia did not run {_what(last)}: {first_line}"
    code = exit_code(last.text)
    outcome = "timed out" if code is None else f"exited {code}"
    return False, f"no run_julia call passed; the last one ran {_what(last)} and {outcome}"


machine = define_machine(
    name="julia",
    intent="Write a Julia program for a task, run it in the sandbox, and report what it printed.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"runs": check("runs", runs), "does_task": judge(), "idiomatic": judge()}
    ),
    tools=[list_files, read_file, write_file, edit_file, run_julia],
    max_steps=10,
)
