"""What a learning call will do, bounded before anything is spent: the most runs it can make, its steps,
and the budget no model call may start past. It is what a consent form shows and what every face says
before the work starts; each room plans its own operation (``plan_optimize``, ``plan_train``, ...)."""

from __future__ import annotations

from machine.runs import Model


class Plan(Model):
    """One learning call's bounds. ``runs`` counts runs (each one model conversation), at most;
    ``steps`` is what the operation counts its work in (proposals, optimizer steps), when it is known
    before the call starts."""

    operation: str
    machine: str
    runs: int
    runs_are: str
    """What the runs are, in words: ``"3 trials of 8 cases for the live version and each proposal"``."""
    steps: int | None = None
    steps_are: str = ""
    harness: str | None = None
    """The harness the machine's runs use (None: not known until the first run)."""
    model: str | None = None
    """The model the machine's runs use (None: not known before the call, or not one model)."""
    price_bound_usd: float | None = None
    """The call's budget: no model call starts past it (None: no budget)."""

    def describe(self) -> str:
        """The plan in one sentence, as a consent form and the command line show it."""
        on = f" on the {self.harness} harness" if self.harness else ""
        on += f" with model {self.model}" if self.model else ""
        counted = f"{self.steps} {self.steps_are}" if self.steps is not None else self.steps_are
        steps = f", {counted}" if counted else ""
        bound = "no budget" if self.price_bound_usd is None else f"at most ${self.price_bound_usd:.2f}"
        return (
            f"{self.operation} {self.machine!r}{on}: at most {self.runs} runs ({self.runs_are}){steps}; "
            f"{bound}"
        )
