"""The exceptions users see. Each message names what is at fault and what to do about it."""

from __future__ import annotations

from typing import Any


class MachineError(Exception):
    """Base of every error this library raises on purpose."""


class DefinitionError(MachineError):
    """A machine, rubric or evaluator is defined wrongly (raised when it is defined or loaded)."""


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


class HarnessError(MachineError):
    """A harness could not run at all (missing key, missing binary, unusable script)."""


class CommitRefused(MachineError):
    """A candidate did not pass the promotion gate, so it was not committed (``force`` overrides).

    ``report`` is the candidate's GateReport and ``version`` the candidate, for showing why.
    """

    def __init__(self, message: str, *, report: Any = None, version: Any = None) -> None:
        super().__init__(message)
        self.report = report
        self.version = version
