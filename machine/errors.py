"""The exceptions users see: one shallow tree under ``MachineError``.

A message says what is wrong in the operation's own terms. Where the caller can get past it by giving an
argument, the error carries a ``Fix`` naming that argument, and each face spells it its own way: the
command line as ``--force``, an MCP tool as ``force: true``, Python as ``force=True`` (``str(error)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BadInputError",
    "BudgetExceeded",
    "CommitRefused",
    "ConsentDeclined",
    "ConsentRequired",
    "DefinitionError",
    "Fix",
    "HarnessError",
    "MachineError",
    "NotFoundError",
    "NotTrusted",
    "StoreError",
    "TrainingError",
    "UnknownPriceError",
    "UsageRefused",
    "WorkFailed",
    "plain_spelling",
    "python_spelling",
]


@dataclass(frozen=True)
class Fix:
    """What gets past an error: an ``argument`` of the operation (``force``, a switch; or ``budget`` with an
    example ``value``), or another ``operation`` on the ``machine`` to do first (``suite``), given the
    ``arguments`` (``(("trials", "4"),)``; a value of None is a switch); ``purpose`` says what it does
    ("to commit it anyway", "makes some")."""

    argument: str = ""
    value: str | None = None
    purpose: str = ""
    operation: str = ""
    machine: str = ""
    arguments: tuple[tuple[str, str | None], ...] = ()


PYTHON_OPERATIONS = {
    "suite": "handle.suite()",
    "run": "handle.run(input)",
    "propose": "handle.propose(model=...)",
    "record": "handle.update()",
    "train": "handle.train()",
    "trust": "machine.trust({machine!r})",
    "runs": "handle.workspace.store.runs(handle.name)",
    "correction": "machine.ops.fork(workspace, note, run_id=...)",
}
"""How a Python caller does each operation a fix can name (``handle = machine.load(name)``)."""


def python_spelling(fix: Fix) -> str:
    """``force=True``, ``budget=2.5``, ``harness='echo'``, ``handle.suite(trials=4)``: how a Python caller
    does it."""
    if fix.operation:
        spelt = PYTHON_OPERATIONS.get(fix.operation, f"handle.{fix.operation}()")
        return f"`{_with_keywords(spelt.format(machine=fix.machine or 'NAME'), fix.arguments)}`"
    return f"pass {fix.argument}={_python_value(fix.value)}"


def _with_keywords(call: str, arguments: Sequence[tuple[str, str | None]]) -> str:
    """``call`` with ``arguments`` as its keywords, in place of the example ones (``model=...``)."""
    if not arguments:
        return call
    head, _, inside = call.partition("(")
    kept = [part for part in inside.removesuffix(")").split(", ") if part and "=" not in part]
    given = [f"{name}={_python_value(value)}" for name, value in arguments]
    return f"{head}({', '.join([*kept, *given])})"


def _python_value(value: str | None) -> str:
    if value is None:
        return "True"
    if value == "none":
        return "None"
    if value.replace("_", "").isupper() or value.replace(".", "", 1).isdigit():
        return value  # a placeholder (MODEL, USD) or a number
    return repr(value)


FACE_SPELLING: ContextVar[Callable[[Fix], str | None] | None] = ContextVar("face_spelling", default=None)
"""How the face a call came through spells a fix, where it set one for the call: the command line does,
so a report's next step reads as a flag a person can paste; an MCP server does not (its tools accept
different arguments each, so their reports keep plain words)."""


def plain_spelling(fix: Fix) -> str:
    """``give judge model MODEL``, ``suite red with trials 4``: a fix in words, for text any face may show
    (a grader's reason, a report's next steps); in the spelling of the face the call came through, where
    it set one (``FACE_SPELLING``) and that face has the fix."""
    face = FACE_SPELLING.get()
    spelt = face(fix) if face is not None else None
    if spelt is not None:
        return spelt
    if fix.operation:
        given = ", ".join(_words(name, value) for name, value in fix.arguments)
        return f"{fix.operation} {fix.machine}".strip() + (f" with {given}" if given else "")
    return f"give {_words(fix.argument, fix.value)}"


def _words(argument: str, value: str | None) -> str:
    return argument.replace("_", " ") + (f" {value}" if value is not None else "")


class MachineError(Exception):
    """Base of every error this library raises on purpose."""

    def __init__(self, message: str, *, fixes: Sequence[Fix] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.fixes = tuple(fixes)

    def explain(self, spell: Callable[[Fix], str | None]) -> str:
        """The message with each fix spelt by ``spell`` (a face's own way to give an argument; None for an
        argument that face does not have)."""
        ways = [(spell(fix), fix.purpose) for fix in self.fixes]
        shown = [f"{way} {purpose}".strip() for way, purpose in ways if way is not None]
        return f"{self.message}; {' or '.join(shown)}" if shown else self.message

    def __str__(self) -> str:
        return self.explain(python_spelling)


class DefinitionError(MachineError):
    """A machine, rubric or evaluator is defined wrongly (raised when it is defined or loaded)."""


class NotTrusted(DefinitionError):
    """A machine holds code a model wrote that the person has not trusted (or that changed since they did):
    nothing of it is imported until they review and trust it. ``files`` are those files' states
    (``machine.spec.FileTrust``)."""

    def __init__(self, message: str, *, machine: str, files: Sequence[Any] = ()) -> None:
        fix = Fix(operation="trust", machine=machine, purpose="after reviewing it")
        super().__init__(message, fixes=[fix])
        self.machine = machine
        self.files = tuple(files)


class NotFoundError(MachineError):
    """A machine, run, case file or session that does not exist."""


class BadInputError(MachineError):
    """An argument or file that cannot be used as given."""


class BudgetExceeded(MachineError):
    """The budget is spent: no new work may start."""


class UnknownPriceError(BudgetExceeded):
    """Usage at a model with no known price, under a budget."""


class ConsentRequired(MachineError):
    """A spending or changing call lacks the person's consent; the message says how to give it."""


class ConsentDeclined(ConsentRequired):
    """The person answered no to the program's question: the call was not made."""


class HarnessError(MachineError):
    """A harness could not run at all (missing key, missing binary, unusable script)."""


class UsageRefused(HarnessError):
    """A model call whose reported usage cannot be right (negative, not a whole number, over what the
    request allowed): the call failed, and ``charged`` says what the budget was charged for it."""

    def __init__(self, message: str, *, charged: float = 0.0) -> None:
        super().__init__(message)
        self.charged = charged


class TrainingError(MachineError):
    """A training service failed a step (or its start, or the save) and retrying did not get past it.

    ``step`` is the optimizer step that failed (0: before the first); ``checkpoint`` the last state saved
    before it (a ``machine.learn.Checkpoint`` to resume from), or None when none was.
    """

    def __init__(
        self, message: str, *, fixes: Sequence[Fix] = (), step: int = 0, checkpoint: Any = None
    ) -> None:
        super().__init__(message, fixes=fixes)
        self.step = step
        self.checkpoint = checkpoint


class CommitRefused(MachineError):
    """A candidate did not pass the promotion gate, so it was not committed (``force`` overrides).

    ``report`` is the candidate's GateReport and ``version`` the candidate, for showing why.
    """

    def __init__(
        self, message: str, *, fixes: Sequence[Fix] = (), report: Any = None, version: Any = None
    ) -> None:
        super().__init__(message, fixes=fixes)
        self.report = report
        self.version = version


class StoreError(MachineError):
    """The store cannot be used as it is: not a database, damaged, read-only, a folder, or its disk full.
    Nothing was written when it is raised on opening."""


class WorkFailed(MachineError):
    """Work of many runs (a suite, a comparison) stopped on a failure that was not the budget.

    The message is the first failure, and names the finished runs that could not be stored. ``lost`` holds
    those runs, ``cause`` the first failure, and ``report`` what the work had done (a suite's report, or
    None), so a face can still show it and what was spent.
    """

    def __init__(
        self,
        message: str,
        *,
        fixes: Sequence[Fix] = (),
        cause: BaseException | None = None,
        lost: Sequence[Any] = (),
        report: Any = None,
    ) -> None:
        super().__init__(message, fixes=fixes)
        self.cause = cause
        self.lost = tuple(lost)
        self.report = report
