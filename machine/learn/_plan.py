"""What a learning call will do, bounded before anything is spent: the most runs it can make, its steps,
the budget no model call may start past, and what would make it spend for nothing (a gate that cannot
pass). It is what a consent form shows and what every face says before the work starts; each room plans
its own operation (``plan_optimize``, ``plan_train``, ...)."""

from __future__ import annotations

from pydantic import Field

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
    warnings: list[str] = Field(default_factory=list)
    """What the person should know before anything is spent: held-out cases too few for the gate to
    pass anything at its ``min_z`` (``thin_gate``), say."""

    def describe(self, *, warnings: bool = True) -> str:
        """The plan in one sentence (then each warning), as a consent form and the command line show it;
        without ``warnings``, the sentence alone (the command line prints them on lines of their own)."""
        on = f" on the {self.harness} harness" if self.harness else ""
        on += f" with model {self.model}" if self.model else ""
        counted = f"{self.steps} {self.steps_are}" if self.steps is not None else self.steps_are
        steps = f", {counted}" if counted else ""
        bound = "no budget" if self.price_bound_usd is None else f"at most ${self.price_bound_usd:.2f}"
        runs = f"{self.runs} {'run' if self.runs == 1 else 'runs'}"
        said = f"{self.operation} {self.machine!r}{on}: at most {runs} ({self.runs_are})"
        said += f"{steps}; {bound}"
        if warnings:
            said += "".join(f". Warning: {w}" for w in self.warnings)
        return said
