"""The separate process that loads an author's child machine and runs its checks on sample runs.

Started by ``vet_child`` as ``python -m machine.learn.specialize.vetting._main REQUEST.json``: the author's
code is imported here and never in the caller. This process caps its own memory before it imports anything the
author wrote, bounds each step with an alarm, and speaks to the caller on a private copy of its stdout
(one JSON object a line: progress, then the result); what the author's code prints goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from machine.errors import MachineError
from machine.grade import CheckGrader, Criterion, GradeContext, Grader
from machine.runs import Run
from machine.spec import Machine, MachineLoader

from ._result import CheckResult, SampleScore, Vetting
from ._sandboxed import Reported

MAX_REASON = 600
MAX_MESSAGE = 1500
MAX_FRAMES = 3
MARGIN_S = 0.25
"""Time kept back at the end to report what happened before the caller stops this process."""
HIDDEN_TESTS = "hidden_tests"
"""The name of the library's hidden-tests grader (machine.sandboxes.hidden_tests)."""


class OutOfTime(BaseException):
    """Raised by the alarm in whatever the author's code is doing; a BaseException, so that an author's
    ``except Exception`` does not swallow it."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise OutOfTime


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with OutOfTime after ``seconds`` (a loop in C that never checks for signals
    is left to the caller, which kills this whole process at its own limit)."""
    if seconds <= 0:
        raise OutOfTime
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Session:
    """One vetting: the request, the channel back to the caller, and the time left."""

    def __init__(self, request: dict[str, Any], channel: TextIO) -> None:
        self.request = request
        self.machines = Path(request["machines"]).resolve()
        self.name: str = request.get("name") or f"{request['parent']}/{request['slug']}"
        self.parent: str = request.get("parent") or self.name.rpartition("/")[0] or self.name
        self.folder = self.machines / self.name
        self.model: str | None = request.get("model")
        self.samples = [Run.model_validate(run) for run in request.get("samples", [])]
        self.check_s = float(request.get("check_s", 10.0))
        self.deadline = float(request.get("deadline", time.time() + 60.0))
        """When the caller stops this process (wall-clock seconds since the epoch, shared by both)."""
        self.channel = channel
        self.vetting = Vetting(model=self.model)

    def left(self) -> float:
        return self.deadline - time.time()

    def say(self, **message: Any) -> None:
        self.channel.write(json.dumps(message, default=str) + "\n")
        self.channel.flush()

    def problem(self, sentence: str) -> None:
        self.vetting.problems.append(_clip(self.relative(sentence), MAX_MESSAGE))

    def relative(self, text: str) -> str:
        """``text`` with the temporary folder's paths made relative: to the child's folder for its own
        files, to the workspace for the rest."""
        for folder, short in ((self.folder, ""), (self.machines, "machines/")):
            text = text.replace(str(folder) + os.sep, short)
        return text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _original(error: BaseException) -> BaseException:
    """The author's own exception behind the loader's sentence about it."""
    if isinstance(error, MachineError) and error.__suppress_context__ and error.__context__ is not None:
        return error.__context__
    return error


def where(error: BaseException, folder: Path) -> list[str]:
    """The last frames of ``error`` inside the child's own files: ``machine.py line 12: <code>``."""
    if isinstance(error, SyntaxError) and error.filename:
        places = [(error.filename, error.lineno, (error.text or "").strip())]
    else:
        places = [
            (f.filename, f.lineno, (f.line or "").strip()) for f in traceback.extract_tb(error.__traceback__)
        ]
    found = []
    for filename, line, code in places:
        path = Path(filename).resolve()
        if path.is_relative_to(folder):
            text = f"{path.relative_to(folder).as_posix()} line {line}"
            found.append(f"{text}: {_clip(code, 160)}" if code else text)
    return found[-MAX_FRAMES:]


def describe(error: BaseException, folder: Path) -> str:
    """An exception as the author should read it: its type, its message and where in their files."""
    original = _original(error)
    frames = where(original, folder)
    if original is not error and not frames:
        return _clip(str(error), MAX_MESSAGE)  # the loader's sentence says where, outside the child
    message = original.msg if isinstance(original, SyntaxError) else str(original)
    text = f"{type(original).__name__}: {_clip(message, MAX_MESSAGE)}"
    return text + (f" (at {'; '.join(frames)})" if frames else "")


def load(session: Session) -> tuple[Machine, Machine] | None:
    """The parent and the child, or None with the reason as a problem."""
    loader = MachineLoader(session.machines)
    session.say(stage="loading", machine=session.parent)
    try:
        with time_limit(session.left() - MARGIN_S):
            parent = loader.load(session.parent)
    except OutOfTime:
        session.problem(f"vetting ran out of time while loading the parent {session.parent!r}")
        return None
    except Exception as error:
        session.problem(f"the parent {session.parent!r} does not load: {describe(error, session.folder)}")
        return None
    session.say(stage="loading", machine=session.name)
    try:
        with time_limit(session.left() - MARGIN_S):
            child = loader.load(session.name)
    except OutOfTime as error:
        frames = where(error, session.folder)
        at = f" (it was at {'; '.join(frames)})" if frames else ""
        session.problem(
            f"loading the child {session.name!r} did not finish in time{at}: import nothing slow "
            "and do no work when machine.py and rubric.py are imported"
        )
        return None
    except BaseException as error:  # SystemExit and the like from the author's code too
        session.problem(f"the child {session.name!r} does not load: {describe(error, session.folder)}")
        return None
    return parent, child


def inspect_child(session: Session, parent: Machine, child: Machine) -> list[str]:
    """Problems with what the child is (not a child, other criteria, other model); its own criteria."""
    name = session.name
    if child.parent is None or child.parent.name != parent.name:
        session.problem(
            f"{name!r} is not a child of {parent.name!r}: build it in machine.py with "
            f"define_child(parent, name={name!r}, ...), taking the parent with "
            "`from ..machine import machine as parent`"
        )
    for criterion, definition in parent.rubric.items():
        mine = child.rubric.get(criterion)
        if mine is None:
            session.problem(
                f"{name!r} drops the inherited criterion {criterion!r}: a child keeps every criterion of "
                f"{parent.name!r} with its grader; define_child adds them, so leave them out of rubric.py"
            )
        elif mine != definition:
            session.problem(
                f"{name!r} changes the inherited criterion {criterion!r} (its description or weight): "
                "a child cannot redefine an inherited criterion; leave it out of rubric.py and name a new one"
            )
    own = [criterion for criterion in child.rubric if criterion not in parent.rubric]
    if not 1 <= len(own) <= 3:
        listed = f" ({', '.join(own)})" if own else ""
        session.problem(
            f"{name!r} adds {len(own)} criteria of its own{listed}: rubric.py must define 1 to 3 new criteria"
        )
    if session.model is not None and child.model != session.model:
        session.problem(
            f"{name!r} runs on {child.model!r}, not on the model asked for, {session.model!r}: pass "
            "model=model_from(__file__, parent.model) to define_child, which reads the model.json beside it"
        )
    vetting = session.vetting
    vetting.inherited = [criterion for criterion in parent.rubric if criterion in child.rubric]
    vetting.own = own
    graders = child.evaluator.graders
    vetting.judged = [c for c in own if graders[c].kind != "check"]
    vetting.hidden_tests = [c for c in own if hidden_tests_grader(graders[c])]
    return [c for c in own if graders[c].kind == "check" and c not in vetting.hidden_tests]


def hidden_tests_grader(grader: Grader) -> bool:
    """Whether ``grader`` is the library's hidden-tests grader: library code, and its tests are written
    with the child's cases, after vetting, so it is not tried on the sample runs."""
    return grader.name == HIDDEN_TESTS and type(grader).__module__.startswith("machine.sandboxes.")


def grade_once(
    session: Session, grader: Grader, run: Run, criterion: str, definition: Criterion
) -> tuple[float | None, str]:
    """One check's grade of one run, bounded in time; an error of any kind is UNSCORED with the reason."""
    seconds = min(session.check_s, session.left() - MARGIN_S)
    try:
        with time_limit(seconds):
            score = asyncio.run(grader.grade(run, criterion, definition, GradeContext()))
    except OutOfTime:
        return None, f"check {grader.name!r} did not finish within {max(seconds, 0):.1f} s"
    except BaseException as error:  # whatever the author's grader raised
        return None, f"grader {grader.name!r} raised {describe(error, session.folder)}"
    return score.score, _clip(session.relative(score.reason), MAX_REASON)


def raised_at(session: Session, grader: Grader, run: Run) -> str:
    """Where in the author's files a check that raised did so, found by calling it again directly."""
    if not isinstance(grader, CheckGrader):
        return ""
    try:
        with time_limit(min(session.check_s, session.left() - MARGIN_S)):
            grader.fn(run, run.case or {}) if grader.wants_case else grader.fn(run)
    except (Exception, OutOfTime) as error:
        frames = where(error, session.folder)
        return f" (at {'; '.join(frames)})" if frames else ""
    return ""


def grade_check(session: Session, child: Machine, criterion: str) -> CheckResult:
    """A check criterion on every sample run, and on each with its output and trajectory removed."""
    grader, definition = child.evaluator.graders[criterion], child.rubric[criterion]
    result = CheckResult(criterion=criterion, grader=grader.name)
    failed: list[str] = []
    for run in session.samples:
        session.say(stage="grading", criterion=criterion, run=run.id, case=run.case_id)
        score, reason = grade_once(session, grader, run, criterion, definition)
        blank = run.model_copy(update={"output": "", "trajectory": []})
        without = grade_once(session, grader, blank, criterion, definition)[0] if score is not None else None
        result.samples.append(
            SampleScore(
                run_id=run.id,
                case_id=run.case_id,
                passed=run.passed,
                score=score,
                reason=reason,
                score_without_output=without,
            )
        )
        if score is None:
            failed.append(
                f"sample run {run.id} (case {run.case_id!r}): {reason}{raised_at(session, grader, run)}"
            )
    if failed:
        more = f"; it also failed on {len(failed) - 1} more sample run(s)" if len(failed) > 1 else ""
        session.problem(
            f"the check {grader.name!r} of criterion {criterion!r} could not grade {failed[0]}{more}: "
            "a check must return a bool or a score in [0, 1] for every run, "
            "including runs that fail the criterion"
        )
    return result


def _unchanged(samples: list[SampleScore]) -> bool:
    return bool(samples) and all(s.score is not None and s.score == s.score_without_output for s in samples)


def second_looks(result: CheckResult) -> list[str]:
    """A note on a check that may not grade what the run did: it scores every sample alike, or else scores
    each the same with what the run did removed (one failing sample says nothing: an empty run fails too)."""
    samples, notes = result.samples, []
    scores = [s.score for s in samples if s.score is not None]
    what = f"the check {result.grader!r} of criterion {result.criterion!r}"
    if len(samples) >= 2 and len(scores) == len(samples) and len(set(scores)) == 1:
        notes.append(
            f"{what} gives all {len(samples)} sample runs the same score ({scores[0]:g}): make sure it "
            "tells a run that meets the criterion from one that does not"
        )
    elif _unchanged(samples) and (len(samples) >= 2 or scores[0] > 0):
        notes.append(
            f"{what} scores every sample run the same with its output and trajectory removed: it reads only "
            "what the run started with (its input, case and starting files), not what the run did"
        )
    return notes


def vet(session: Session) -> Vetting:
    """Everything vetting finds out about the child, as far as it gets in the time it has."""
    loaded = load(session)
    if loaded is None:
        return session.vetting
    parent, child = loaded
    checks = inspect_child(session, parent, child)
    for criterion in checks:
        if session.left() < 1.0:
            session.problem(f"vetting ran out of time before the check of criterion {criterion!r} was run")
            break
        result = grade_check(session, child, criterion)
        session.vetting.checks.append(result)
        session.vetting.second_look.extend(second_looks(result))
    return session.vetting


def _channel() -> TextIO:
    """A private copy of stdout for the caller; fd 1 and ``sys.stdout`` then write to stderr, so nothing
    the author's code prints can pass for a reply."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def _limit(which: int, value: int) -> None:
    """Lower a resource limit to ``value`` (never above the hard limit this process already has)."""
    _, hard = resource.getrlimit(which)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def main(argv: list[str], vet: Callable[[Session], Reported] = vet) -> None:
    """Do what the request at ``argv[1]`` asks with ``vet`` and report on the private channel."""
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    memory = int(request.get("memory_bytes", 0))
    if memory > 0:
        _limit(resource.RLIMIT_AS, memory)
    _limit(resource.RLIMIT_CORE, 0)
    channel = _channel()
    session = Session(request, channel)
    try:
        vetting = vet(session)
    except BaseException as error:  # the author's code may have broken anything
        session.problem(f"vetting failed: {describe(error, session.folder)}")
        vetting = session.vetting
    if vetting is not session.vetting:  # what loading found comes first
        vetting.problems = [*session.vetting.problems, *vetting.problems]
    session.say(result=vetting.model_dump(mode="json"))
    channel.close()
    sys.stderr.flush()
    os._exit(0)  # skip the author's atexit handlers and finalizers: they could hang or print


if __name__ == "__main__":
    main(sys.argv)
