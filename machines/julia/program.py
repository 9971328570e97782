"""The Julia program a run produced, read from its trajectory, and checks that grade its source.

The program is what the run's LAST ``run_julia`` call ran: the ``code`` it was given, or the file at
``path`` as the run's own successful ``write_file`` and ``edit_file`` calls (on top of the case's
files) had left it at that moment. A run that never called ``run_julia`` is graded on the last
``.jl`` file it wrote. Files the program ``include``s are not followed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from machine import Grader, Run, check

from ..coder.steps import Step, changes, files_at, normalize, steps
from .source import code_only

TOOL = "run_julia"


@dataclass(frozen=True)
class Program:
    source: str
    origin: str
    """Where the source came from: a file name, or ``the code given to run_julia``."""
    step: Step | None
    """The run_julia call that ran it; None for a written file that was never run."""


def programs(run: Run) -> list[Program]:
    """The program of each run_julia call whose source is known, in order."""
    found: list[Program] = []
    for step in steps(run):
        if step.name != TOOL:
            continue
        code, path = step.argument("code"), step.argument("path")
        if isinstance(code, str) and code.strip():
            found.append(Program(code, "the code given to run_julia", step))
        elif isinstance(path, str) and path.strip():
            source = files_at(run, before=step.index).get(normalize(path))
            if source is not None:
                found.append(Program(source, normalize(path), step))
    return found


def final_program(run: Run) -> Program | None:
    """The program the run ran last, else the last .jl file it wrote, else None."""
    ran = programs(run)
    if ran:
        return ran[-1]
    files = files_at(run)
    for step in reversed(changes(run)):
        path = normalize(step.argument("path"))
        if path.endswith(".jl") and path in files:
            return Program(files[path], path, None)
    return None


CodeCheck = Callable[[str], tuple[bool, str]]


def on_program(name: str, judge_code: CodeCheck) -> Grader:
    """A check of the final program's code (comments and literal text blanked, see ``code_only``).
    A run with no Julia program scores 0."""

    def grade(run: Run) -> tuple[bool, str]:
        program = final_program(run)
        if program is None:
            return False, "the run wrote and ran no Julia program"
        ok, reason = judge_code(code_only(program.source))
        return ok, f"{program.origin}: {reason}"

    grade.__name__ = name
    return check(name, grade)
