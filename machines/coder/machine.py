"""coder: writes a program with write_file and runs it with run in the run's sandbox.

Whether it wrote and ran a file is decided from the real tool results (a write that succeeded, then
a command naming that file that exited 0), so a reply cannot claim a run that did not happen. Whether
the output does the task takes judgement, so a judge reads the run's results.
"""

from __future__ import annotations

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from
from machine.sandboxes.tools import edit_file, list_files, read_file, run, write_file

from .rubric import rubric
from .steps import Step, command, exit_code, passed, runs_file, steps


def _outcome(step: Step) -> str:
    if not step.ok:
        return f"was refused ({step.text.splitlines()[0] if step.text else 'no result'})"
    code = exit_code(step.text)
    return "timed out" if code is None else f"exited {code}"


def ran_a_file(run: Run) -> tuple[bool, str]:
    """A write_file that succeeded, then a run whose command runs the written file (names it in a
    command that is not just ``cat`` or ``ls``) and exited 0."""
    every = steps(run)
    written = [s for s in every if s.name == "write_file" and s.ok and isinstance(s.argument("path"), str)]
    if not written:
        tried = sum(1 for s in every if s.name == "write_file")
        return False, "no write_file call succeeded" if tried else "wrote no file with write_file"
    failed: tuple[Step, str] | None = None
    for step in every:
        if step.name != "run":
            continue
        ran = [
            w.argument("path")
            for w in written
            if w.index < step.index and runs_file(command(step), w.argument("path"))
        ]
        if not ran:
            continue
        if passed(step):
            return True, f"wrote {ran[-1]} and `{command(step)}` exited 0"
        failed = (step, ran[-1])
    if failed is not None:
        step, path = failed
        return (
            False,
            f"ran {path} with `{command(step)}`, which {_outcome(step)}, and no later run of it passed",
        )
    paths = ", ".join(dict.fromkeys(w.argument("path") for w in written))
    if any(s.name == "run" for s in every):
        return False, f"wrote {paths}, but no run command after the write runs it"
    return False, f"wrote {paths} but never ran it with run"


machine = define_machine(
    name="coder",
    intent="Write a small program for a task, run it in the sandbox, and report what it printed.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"ran_a_file": check("ran_a_file", ran_a_file), "does_task": judge()}),
    tools=[list_files, read_file, write_file, edit_file, run],
    max_steps=10,
)
