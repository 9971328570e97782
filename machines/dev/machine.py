"""dev: a development assistant for an existing project.

It lists, searches, reads, edits and writes the project's files and runs commands in the run's
sandbox. It answers, explains and plans, and changes files only when asked. Whether a command passed
after its last change is checked from the tool results; whether it did what was asked, stayed on task
and acted on the request take judgement.

Cases hold small Python projects (``files``) with a ``kind``: ``fix`` and ``feature`` ask for a change
(their ``reference`` edits make ``python3 -m unittest`` pass), ``question``, ``plan`` and ``run`` ask
for an answer or a report, and ``unclear`` is input that needs a question back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from
from machine.sandboxes.tools import edit_file, list_files, read_file, run, search_files, write_file

from ..coder.steps import Step, active, changes, command, exit_code, passed, simple_commands, steps
from .rubric import rubric

CHANGE_KINDS = ("fix", "feature")
"""Case kinds that ask for a change: for them, changing nothing is not verified."""

_NO_TESTS = re.compile(r"^Ran 0 tests in |^NO TESTS RAN|\bno tests ran\b|\bcollected 0 items\b", re.MULTILINE)
"""unittest (which exits 0 on Python 3.11 when it finds nothing) and pytest saying they ran no test."""


def verifies(command_line: str) -> bool:
    """Whether a command line runs something that can check work: some part of it is not one of the
    passive commands (``python3 -m unittest`` is; ``echo ok``, ``cat calc.py`` and ``ls && pwd`` are not)."""
    return any(active(words) for words in simple_commands(command_line))


def ran_no_tests(result: str) -> bool:
    """Whether a command's result shows a test runner that found no tests: exiting 0 then proves nothing."""
    return _NO_TESTS.search(result) is not None


def _outcome(step: Step) -> str:
    if not step.ok:
        return "was refused"
    code = exit_code(step.text)
    return "timed out" if code is None else f"exited {code}"


def verified(run: Run, case: Mapping[str, Any]) -> tuple[bool, str]:
    """After its last successful write or edit, a checking command exited 0 (a test runner that ran
    no tests does not count). With no change: passes, unless the case's kind asked for one."""
    changed = changes(run)
    if not changed:
        if case.get("kind") in CHANGE_KINDS:
            return False, f"the request asked for a change ({case['kind']}), and no file was changed"
        return True, "changed no files, so there was nothing to verify"
    last = changed[-1]
    where = last.argument("path")
    after = [s for s in steps(run) if s.name == "run" and s.index > last.index]
    checking = [s for s in after if verifies(command(s))]
    for step in checking:
        if passed(step) and not ran_no_tests(step.text):
            return True, f"`{command(step)}` exited 0 after the last change (to {where})"
    if checking:
        final = checking[-1]
        outcome = "exited 0 but ran no tests" if passed(final) else _outcome(final)
        return False, f"after the last change (to {where}), `{command(final)}` {outcome}"
    if after:
        return False, f"after the last change (to {where}) it ran only commands that check nothing"
    return False, f"changed {where} but ran no command afterwards"


machine = define_machine(
    name="dev",
    intent=(
        "Help with an existing project: answer questions about it, plan, run things and report, and "
        "change files only when asked, checking each change by running the tests."
    ),
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "verified": check("verified", verified),
            "did_what_was_asked": judge(),
            "stayed_on_task": judge(),
            "acts_on_request": judge(),
        },
    ),
    tools=[list_files, search_files, read_file, write_file, edit_file, run],
    max_steps=20,
)
