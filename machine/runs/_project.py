"""A project run read two ways: which files its successful writes and edits left, and what a test
runner's output says happened.

Both are needed apart from the sandbox a run acted in (removed when the run ends): a case's checks are
vetted before any run exists, and a hidden-tests grader rebuilds a finished run's files to test them.
Vetting and grading read runner output with the same function, so a test vetted as passing with the
reference fix is graded as passing when a run makes the same fix.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._records import Run

WORKDIR = "/work"
"""Where a sandbox's directory appears to its commands; ``/work/a.py`` names ``a.py``."""
CHANGING_TOOLS = ("write_file", "edit_file")
TEST_NAME = re.compile(r"test_[A-Za-z0-9_]+\.py")
"""A hidden test's file name: a top-level ``test_*.py``, so that it runs alone as a unittest module."""

_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.MULTILINE)
_PYTEST_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?)\b")
_NO_TESTS = re.compile(r"^NO TESTS RAN|\bno tests ran\b|\bcollected 0 items\b", re.MULTILINE)
_PROBLEM = re.compile(r"^(?:FAIL|ERROR): .+$|^\w*(?:Error|Exception)\b.*$", re.MULTILINE)


def sandbox_path(path: str) -> str | None:
    """One spelling of a path inside a sandbox (``./a.py``, ``/work/a.py`` and ``a.py`` are ``a.py``);
    None for one that leads outside it or names the directory itself."""
    path = path.strip()
    if path == WORKDIR or path.startswith(WORKDIR + "/"):
        path = path[len(WORKDIR) :].lstrip("/")
    if not path or "\x00" in path or path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    if normal == "." or normal == ".." or normal.startswith("../"):
        return None
    return normal


def final_files(run: Run, starting: Mapping[str, str]) -> dict[str, str]:
    """The project as ``run`` left it: ``starting`` with the run's ``write_file`` and ``edit_file``
    calls replayed in order. A call counts only when its tool result is not an error (a refused edit
    changed nothing); files a command made or changed (``run``) are not known and are absent."""
    files: dict[str, str] = {}
    for name, text in starting.items():
        key = sandbox_path(name)
        if key is not None and isinstance(text, str):
            files[key] = text
    results = {m.tool_call_id: m for m in run.trajectory if m.role == "tool" and m.tool_call_id}
    for call in run.tool_calls:
        result = results.get(call.id)
        if call.name not in CHANGING_TOOLS or result is None or result.is_error:
            continue
        arguments = call.arguments or {}
        path = arguments.get("path")
        key = sandbox_path(path) if isinstance(path, str) else None
        if key is None:
            continue
        if call.name == "write_file":
            content = arguments.get("content")
            if isinstance(content, str):
                files[key] = content
            continue
        old, new = arguments.get("old"), arguments.get("new")
        if key in files and isinstance(old, str) and isinstance(new, str) and old:
            files[key] = files[key].replace(old, new, 1)
    return files


@dataclass(frozen=True)
class RunnerOutcome:
    """What one run of a test command showed: whether it passed, and how many tests ran and failed."""

    passed: bool
    """Exit 0, in time, having run at least one test (a runner that found none proves nothing)."""
    exit_code: int | None
    timed_out: bool
    ran: int | None
    """How many tests the runner said it ran; None when its output does not say."""
    failed: int | None
    """Failures and errors together, where the output counts them."""
    problems: tuple[str, ...] = ()
    """The first few ``FAIL:``/``ERROR:`` and exception lines, to say why in a sentence."""

    def describe(self, timeout_s: float | None = None) -> str:
        """The outcome in a few words: "2 of 3 failed", "3 of 3 passed", "ran no tests"."""
        if self.timed_out:
            return f"timed out after {timeout_s:g} s" if timeout_s is not None else "timed out"
        if self.ran == 0:
            return f"ran no tests (exit code {self.exit_code})"
        if self.ran is not None:
            if self.passed:
                return f"{self.ran} of {self.ran} passed"
            failed = self.failed if self.failed is not None else "some"
            return f"{failed} of {self.ran} failed"
        what = "passed" if self.exit_code == 0 else "failed"
        return f"{what} with exit code {self.exit_code}, without saying how many tests ran"

    def why(self) -> str:
        """``describe()`` followed by the lines that say what went wrong, if any."""
        if not self.problems:
            return self.describe()
        return f"{self.describe()}: " + "; ".join(self.problems)


def runner_outcome(
    exit_code: int | None, stdout: str, stderr: str, *, timed_out: bool = False
) -> RunnerOutcome:
    """Read a unittest or pytest run from its exit code and output."""
    text = f"{stdout}\n{stderr}"
    ran: int | None = None
    failed: int | None = None
    runs = _RAN.findall(text)
    if runs:
        ran = int(runs[-1])
        summary = _UNITTEST_FAILED.findall(text)
        if summary:
            failed = sum(int(n) for key, n in _pairs(summary[-1]) if key in ("failures", "errors"))
        elif exit_code == 0:
            failed = 0
    else:
        counts = {kind.rstrip("s"): int(n) for n, kind in _PYTEST_COUNT.findall(text)}
        if counts:
            failed = counts.get("failed", 0) + counts.get("error", 0)
            ran = counts.get("passed", 0) + failed
    if ran is None and _NO_TESTS.search(text):
        ran = 0
    problems = tuple(line.strip()[:200] for line in _PROBLEM.findall(text)[:3])
    passed = exit_code == 0 and not timed_out and ran is not None and ran > 0
    return RunnerOutcome(passed, None if timed_out else exit_code, timed_out, ran, failed, problems)


def _pairs(summary: str) -> list[tuple[str, str]]:
    """``failures=2, errors=1`` as ``[("failures", "2"), ("errors", "1")]``."""
    found = []
    for part in summary.split(","):
        key, _, value = part.strip().partition("=")
        if value.strip().isdigit():
            found.append((key.strip(), value.strip()))
    return found


def alone(command: str, test_file: str) -> str:
    """The command line that runs one test file by itself: ``python3 -m unittest test_edge`` for
    ``test_edge.py`` (a unittest module name; other runners are given the file)."""
    if "unittest" in command and test_file.endswith(".py"):
        return f"{command} {test_file[:-3].replace('/', '.')}"
    return f"{command} {test_file}"
