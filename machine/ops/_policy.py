"""Spending and consent: one policy for the server, the CLI and the machinist.

Every spending tool takes a ``budget_usd`` that ``check_amount`` caps at ``max_per_call`` ($10, or
``MACHINIST_MAX_BUDGET``). A spending or changing call runs only with the person's consent through a
channel the model cannot forge:

- ``"elicitation"``: the person answered the host's form (the server asks; ``consented`` records it);
- ``"allowance"``: the person set ``MACHINE_ALLOW_SPEND_USD`` in the server's own configuration (for
  example the ``env`` of the machine server in the host's MCP config); ``reserve`` draws on it;
- ``"command"``: the person typed the command (the CLI; ``consented`` records it);
- ``"code"``: the person's own program called the SDK handle (``consented`` records it);
- ``"terminal"``: the person answered the program's own question at a terminal (``AskingPolicy``).

The allowance is one running total across calls within one process, however many run at once: each
``reserve`` takes its amount off, and ``settle`` gives back what the call did not spend or takes what it
spent beyond it, so an overdraft is carried into the next calls (they are refused until it is paid off
by a larger allowance). Each model call of a call under the allowance is also held against the
allowance's ``ledger`` (a ``Budget`` every such call's budget spends from), so calls running together
cannot spend past it by more than one model call's reservation. It lives in memory only, so it starts
again from the configured value when the server restarts: the person's configuration sets it.

Every settled call is recorded (``log()``) and, given a spending log (``log``, or a file at ``log_path``),
appended to it as one line with the correlation id, the tool, the machine, the amount allowed and spent,
and who consented how. The line never holds a token or a key: only the fields listed, with the
``detail`` the caller gave.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, get_args

from machine.budget import Budget
from machine.errors import BadInputError, ConsentRequired
from machine.runs import now, timestamp

from ._spending_log import FileSpendingLog, SpendingLog

MAX_BUDGET_ENV = "MACHINIST_MAX_BUDGET"
ALLOWANCE_ENV = "MACHINE_ALLOW_SPEND_USD"
DEFAULT_MAX_PER_CALL = 10.0

ConsentHow = Literal["elicitation", "allowance", "command", "code", "terminal"]
OtherWay = Literal["elicitation", "command", "code", "terminal"]
"""Consent given another way than through the allowance."""


@dataclass(frozen=True)
class Consent:
    """Who consented to a call, and how.

    ``how``: ``"elicitation"`` (the person in the host's form), ``"allowance"`` (the allowance the
    person set in the server's configuration, or typed on the command line), ``"command"`` (the person
    typing a command), ``"code"`` (the person's own program calling the SDK) or ``"terminal"`` (the
    person's answer to the program's own question at a terminal).
    ``detail`` says more, e.g.
    ``"MACHINE_ALLOW_SPEND_USD=5 ($3.20 left before this call)"``.
    """

    how: ConsentHow
    detail: str


@dataclass
class _Pending:
    tool: str | None
    machine: str | None
    budget_usd: float | None
    reserved: float  # taken off the allowance (0 for consent given another way)
    consent: Consent


def _usd(value: float) -> str:
    return f"${value:.2f}"


def _number(value: object) -> float | None:
    """``value`` as a finite float, or None when it is not a number (bools and strings are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _from_env(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise BadInputError(
            f"{name}={raw!r} is not usable: set it to a non-negative number of USD, e.g. {name}=5"
        )
    return value


def _explicit(name: str, value: object) -> float:
    number = _number(value)
    if number is None or number < 0:
        raise BadInputError(f"{name}={value!r} must be a non-negative number of USD")
    return number


class SpendingPolicy:
    """Caps each call's budget and checks (and records) the person's consent for it. Thread-safe.

    ``max_per_call`` defaults to ``MACHINIST_MAX_BUDGET``, else $10; ``allowance`` to
    ``MACHINE_ALLOW_SPEND_USD`` (unset: no allowance). An unusable environment value raises ``BadInputError``
    naming the variable.
    """

    changes_note: ClassVar[str] = (
        " The allowance also authorises the changing tools (commit, revert), which spend nothing: "
        "set it, even to 0, to let an agent make those changes without being asked."
    )
    """Said after a changing call's refusal: how this policy lets such calls be made."""
    exact: ClassVar[bool] = False
    """Whether what a call was approved to spend is never passed (a hard budget), not a cap that the
    calls in flight may pass by one model call's reservation."""

    def __init__(
        self,
        *,
        max_per_call: float | None = None,
        allowance: float | None = None,
        log_path: Path | None = None,
        log: SpendingLog | None = None,
        within: Budget | None = None,
    ) -> None:
        if max_per_call is None:
            cap = _from_env(MAX_BUDGET_ENV, DEFAULT_MAX_PER_CALL)
            assert cap is not None
            self._cap_from_env = MAX_BUDGET_ENV in os.environ and bool(os.environ[MAX_BUDGET_ENV].strip())
        else:
            cap = _explicit("max_per_call", max_per_call)
            self._cap_from_env = False
        self.max_per_call: float = cap
        file_log = FileSpendingLog(Path(log_path)) if log_path is not None else None
        self.spending_log = log if log is not None else file_log
        """Where each settled spend is written (None: kept in this process only)."""
        self.within = within
        """A budget every call this policy consents spends from as well (a session's), or None."""
        self.part_of: str | None = None
        """The correlation id of the spend whose total holds this policy's (a command's), written on each
        of its lines as ``within`` so a sum of the log counts them once."""
        given = _from_env(ALLOWANCE_ENV, None) if allowance is None else _explicit("allowance", allowance)
        self._allow(given, f"{ALLOWANCE_ENV}={given:g}" if given is not None else "", ALLOWANCE_ENV)
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._log: list[dict[str, object]] = []

    def _allow(self, allowance: float | None, source: str, name: str) -> None:
        """Set the allowance (None: none): ``source`` says how the person gave it (in the log), ``name``
        is what a refusal calls it."""
        self.allowance: float | None = allowance
        self.allowance_source = source
        self._left = allowance
        self.ledger: Budget | None = (
            None
            if allowance is None
            else Budget(allowance, parent=self.within, label=f"allowance {name}", hard=self.exact)
        )
        """What every call consented through the allowance spends, model call by model call."""

    @classmethod
    def from_env(cls, log_path: Path | None = None, *, log: SpendingLog | None = None) -> SpendingPolicy:
        """The policy the person configured through the environment."""
        return cls(log_path=log_path, log=log)

    # -- amounts -------------------------------------------------------------------------------------------

    def check_amount(self, budget_usd: object) -> float:
        """``budget_usd`` as a float: a finite number of USD, at least 0 and at most ``max_per_call``."""
        number = _number(budget_usd)
        source = f"set by {MAX_BUDGET_ENV}" if self._cap_from_env else f"raise it with {MAX_BUDGET_ENV}"
        allowed = f"a number of USD from 0 to {self.max_per_call:g} (the cap per call, {source})"
        if number is None or number < 0:
            raise BadInputError(f"budget_usd={budget_usd!r} is not allowed: give {allowed}")
        if number > self.max_per_call:
            raise BadInputError(
                f"budget_usd={number:g} is over the cap of {_usd(self.max_per_call)} per call: give {allowed}"
            )
        return number

    def limit(self, amount: float) -> float:
        """The most a call asking for ``amount`` may spend: held to what is left of ``within``, and
        refused (``BudgetExceeded``) once that is spent."""
        if self.within is None:
            return amount
        self.within.check()
        left = self.within.remaining
        return amount if left is None else min(amount, left)

    def holder(self, consent: Consent) -> Budget | None:
        """The budget a call consented so spends from as well: the allowance's, else ``within``."""
        return self.ledger if consent.how == "allowance" and self.ledger is not None else self.within

    @property
    def allowance_left(self) -> float | None:
        """What is left of the allowance in this process (None: no allowance configured)."""
        with self._lock:
            return self._left

    # -- consent -------------------------------------------------------------------------------------------

    def reserve(self, amount: float, *, tool: str, machine: str) -> tuple[str, Consent]:
        """Consent through the allowance: take ``amount`` off the running total.

        Raises ``ConsentRequired`` (saying how the person can allow it) when there is no allowance or too
        little left; a refusal takes nothing.
        """
        amount = self.check_amount(amount)
        with self._lock:
            if self._left is None or self.allowance is None:
                raise ConsentRequired(self._no_allowance_message(amount, tool, machine))
            if amount > 0 and amount > self._left:  # a call that spends nothing needs no room
                raise ConsentRequired(
                    self._ran_out_message(amount, tool, machine, self._left, self.allowance)
                )
            consent = Consent(
                "allowance", f"{self.allowance_source} ({_usd(self._left)} left before this call)"
            )
            self._left -= amount
            correlation_id = self._new_id()
            self._pending[correlation_id] = _Pending(tool, machine, amount, amount, consent)
            return correlation_id, consent

    def consented(
        self,
        how: OtherWay,
        detail: str,
        *,
        budget_usd: float | None = None,
        tool: str | None = None,
        machine: str | None = None,
        capped: bool = True,
    ) -> tuple[str, Consent]:
        """A correlation id for consent given another way (the host's form, or a command the person typed).

        ``budget_usd``, ``tool`` and ``machine`` are optional; given, they go into the log line that
        ``settle`` writes. ``budget_usd`` is held to ``max_per_call`` unless ``capped=False``: the cap
        limits what a model asks for, not a budget the person set themselves (the CLI's ``--budget``),
        which must still be a non-negative number of USD.
        """
        if how not in get_args(OtherWay):
            raise BadInputError(
                f"consent how={how!r} is not one of {', '.join(map(repr, get_args(OtherWay)))} "
                "(the allowance goes through reserve())"
            )
        if budget_usd is None:
            amount = None
        elif capped:
            amount = self.check_amount(budget_usd)
        else:
            amount = _explicit("budget_usd", budget_usd)
        consent = Consent(how, str(detail))
        with self._lock:
            correlation_id = self._new_id()
            self._pending[correlation_id] = _Pending(tool, machine, amount, 0.0, consent)
        return correlation_id, consent

    def settle(self, correlation_id: str, *, spent_usd: float, log: bool = True) -> None:
        """After the call: give the unspent part of a reservation back to the allowance and record the spend
        (``log=False``: a call that failed before spending anything leaves no line).

        Spending past the reservation is taken off the allowance too, below zero if need be: the
        overdraft is carried, so the next calls are refused until the allowance is raised.
        """
        spent = _number(spent_usd)
        if spent is None or spent < 0:
            raise BadInputError(f"spent_usd={spent_usd!r} must be a non-negative number of USD")
        with self._lock:
            pending = self._pending.pop(correlation_id, None)
            if pending is None:
                raise BadInputError(
                    f"no open spend with correlation id {correlation_id!r} "
                    "(already settled, or never started)"
                )
            if pending.consent.how == "allowance" and self._left is not None:
                self._left = self._left + pending.reserved - spent
            if not log:
                return
            entry: dict[str, object] = {
                "at": timestamp(now()),
                "correlation_id": correlation_id,
                "tool": pending.tool,
                "machine": pending.machine,
                "budget_usd": pending.budget_usd,
                "spent_usd": spent,
                "consent": {"how": pending.consent.how, "detail": pending.consent.detail},
            }
            if self.part_of is not None:
                entry["within"] = self.part_of
            self._log.append(entry)
            if self.spending_log is not None:
                self.spending_log.append(entry)

    def log(self) -> list[dict[str, object]]:
        """What this policy recorded in this process, oldest first (copies)."""
        with self._lock:
            return [json.loads(json.dumps(entry)) for entry in self._log]

    # -- helpers -------------------------------------------------------------------------------------------

    def _new_id(self) -> str:
        while True:
            correlation_id = "spend-" + secrets.token_hex(6)
            if correlation_id not in self._pending:
                return correlation_id

    @staticmethod
    def _how_to_allow(suggest: float) -> str:
        return (
            f'To allow it, add "{ALLOWANCE_ENV}": "{suggest:g}" to the "env" of the machine server in '
            "your MCP host's configuration (e.g. claude_desktop_config.json or opencode.json) and restart "
            "the server; or use an MCP client that supports elicitation, so you are asked each time."
        )

    def _no_allowance_message(self, amount: float, tool: str, machine: str) -> str:
        suggest = max(5.0, float(math.ceil(amount)))
        return (
            f"{tool} on {machine!r} (budget {_usd(amount)}) needs your consent: this client cannot ask you "
            f"(no MCP elicitation) and no spending allowance is set. {self._how_to_allow(suggest)}"
        )

    def _ran_out_message(self, amount: float, tool: str, machine: str, left: float, allowance: float) -> str:
        suggest = float(math.ceil(allowance + amount + max(-left, 0.0)))
        what = f"only {_usd(left)} is left" if left >= 0 else f"it is overdrawn by {_usd(-left)}"
        return (
            f"{tool} on {machine!r} (budget {_usd(amount)}) needs your consent: {what} of the allowance "
            f"{ALLOWANCE_ENV}={allowance:g}. To allow more, raise it (e.g. "
            f'"{ALLOWANCE_ENV}": "{suggest:g}") in the "env" of the machine server in your MCP host\'s '
            "configuration and restart the server (the running total starts again from the new value); "
            "or ask for a smaller budget_usd; or use an MCP client that supports elicitation."
        )
