"""A grader for machines whose runs change a project: held-back test files the machine never saw, run
one at a time against the files the run left.

The tests live in ``hidden.json`` beside the machine file (docs/concepts.md#hidden-tests), never in
the case a run is given. A run's own sandbox is gone by the time it is graded, so its final files are
rebuilt from the case's starting files and its successful ``write_file``/``edit_file`` calls, then
each hidden file is run alone in a fresh sandbox seeded with them (isolated by bubblewrap where it
works, as runs are).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine.errors import MachineError
from machine.runs import TEST_NAME, CriterionScore, Run, alone, final_files, runner_outcome

from ._local import LocalSandbox

HIDDEN_FILE = "hidden.json"
MAX_HIDDEN_BYTES = 20_000_000
"""A hidden.json larger than this is not read (it holds text files, a few per case)."""
MAX_FILES_PER_CASE = 20


class HiddenTestsUnscored(LookupError):
    """The run cannot be graded with hidden tests (no hidden.json, no tests for its case): UNSCORED."""


def read_hidden(path: Path, case_id: str) -> dict[str, str]:
    """The hidden test files of ``case_id`` in the hidden.json at ``path``; refused in words when the
    file is missing, unreadable, malformed or has no tests for the case."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise HiddenTestsUnscored(f"{path} does not exist, so case {case_id!r} has no hidden tests") from None
    except OSError as error:
        raise HiddenTestsUnscored(f"{path} cannot be read: {error.strerror or error}") from None
    if size > MAX_HIDDEN_BYTES:
        raise HiddenTestsUnscored(f"{path} is {size:,} bytes, over the {MAX_HIDDEN_BYTES:,} it may be")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise HiddenTestsUnscored(f"{path} is not readable JSON: {error}") from None
    entry = data.get(case_id) if isinstance(data, dict) else None
    if entry is None:
        raise HiddenTestsUnscored(f"{path} has no hidden tests for case {case_id!r}")
    files = entry.get("files") if isinstance(entry, dict) else None
    if not isinstance(files, dict) or not files:
        raise HiddenTestsUnscored(f'{path}: case {case_id!r} needs a non-empty "files" object of test files')
    if len(files) > MAX_FILES_PER_CASE:
        raise HiddenTestsUnscored(
            f"{path}: case {case_id!r} has {len(files)} hidden files, over {MAX_FILES_PER_CASE}"
        )
    for name, text in files.items():
        if not TEST_NAME.fullmatch(name) or not isinstance(text, str):
            raise HiddenTestsUnscored(
                f"{path}: case {case_id!r} has {name!r}, which is not a test_*.py file name with text"
            )
    return dict(files)


async def run_alone(
    files: Mapping[str, str], test_file: str, text: str, *, command: str, timeout_s: float
) -> tuple[bool, str]:
    """Run ``test_file`` by itself in a fresh scratch sandbox holding ``files`` and it: whether it passed, and
    what happened in words. The sandbox and its folder are removed afterwards. The files hold what a
    model wrote, so they run only where the sandbox is isolated; a sandbox that is not, or that cannot
    be made, leaves the run ungraded (HiddenTestsUnscored), never failed."""
    root = Path(tempfile.mkdtemp(prefix="machine-hidden-"))
    try:
        box = LocalSandbox.for_scratch(root, "project", {**files, test_file: text})
        try:
            if not box.isolated:
                raise HiddenTestsUnscored(
                    "the sandbox is not isolated (bubblewrap is missing or cannot make namespaces here), "
                    "so the run's files were not run with its hidden tests: install bubblewrap"
                )
            done = await box.exec(
                f"PYTHONDONTWRITEBYTECODE=1 {alone(command, test_file)}", timeout_s=timeout_s
            )
        finally:
            box.remove()
    except MachineError as error:
        raise HiddenTestsUnscored(f"{test_file} could not be run: {error}") from error
    finally:
        shutil.rmtree(root, ignore_errors=True)
    outcome = runner_outcome(done.exit_code, done.stdout, done.stderr, timed_out=done.timed_out)
    return outcome.passed, outcome.why() if not outcome.passed else outcome.describe(timeout_s)


@dataclass(frozen=True)
class HiddenTests:
    """The hidden-tests grader: a check of the run and its case (``fn``), scoring the fraction of the
    case's hidden test files that pass alone on the run's final files."""

    hidden_file: Path
    command: str = "python3 -m unittest"
    timeout_s: float = 60.0
    name: str = "hidden_tests"
    kind: str = "check"
    wants_case: bool = field(default=True, init=False)

    async def fn(self, run: Run, case: Mapping[str, Any]) -> tuple[float, str]:
        """The score and reason; raises HiddenTestsUnscored when the run cannot be graded this way."""
        case_id = run.case_id or (case.get("id") if isinstance(case, Mapping) else None)
        if not isinstance(case_id, str) or not case_id:
            raise HiddenTestsUnscored("the run has no case, so it has no hidden tests")
        hidden = read_hidden(self.hidden_file, case_id)
        starting = case.get("files") if isinstance(case, Mapping) else None
        files = final_files(run, starting if isinstance(starting, Mapping) else {})
        failures = []
        for test_file in sorted(hidden):
            passed, what = await run_alone(
                files, test_file, hidden[test_file], command=self.command, timeout_s=self.timeout_s
            )
            if not passed:
                failures.append(f"{test_file} ({what})")
        total = len(hidden)
        if not failures:
            return 1.0, f"{total} of {total} hidden test files pass alone on the run's files"
        return (total - len(failures)) / total, (
            f"{len(failures)} of {total} hidden test files fail alone on the run's files: "
            + "; ".join(failures)
        )

    async def grade(self, run: Run, criterion: str, definition: Any, ctx: Any) -> CriterionScore:
        """The Grader protocol: the check's score, or UNSCORED with the reason (never 0 or 1)."""
        grader = f"{self.kind}:{self.name}"
        try:
            score, reason = await self.fn(run, run.case or {})
        except HiddenTestsUnscored as error:
            return CriterionScore(
                criterion=criterion, weight=definition.weight, grader=grader, score=None, reason=str(error)
            )
        except Exception as error:  # a failure of the grader itself is UNSCORED, never a score
            reason = f"check {self.name!r} raised {type(error).__name__}: {error}"
            return CriterionScore(
                criterion=criterion, weight=definition.weight, grader=grader, score=None, reason=reason
            )
        return CriterionScore(
            criterion=criterion, weight=definition.weight, grader=grader, score=score, reason=reason
        )


def hidden_tests(
    machine_file: str, *, command: str = "python3 -m unittest", timeout_s: float = 60
) -> HiddenTests:
    """A check grader named ``hidden_tests`` for the machine defined in ``machine_file`` (pass
    ``__file__``): it reads ``hidden.json`` beside that file when it grades, so new tests count at once."""
    return HiddenTests(
        Path(machine_file).resolve().parent / HIDDEN_FILE, command=command, timeout_s=timeout_s
    )
