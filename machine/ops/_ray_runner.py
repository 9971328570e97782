"""What a Ray worker runs (an actor per node): the machines folder it was shipped is its workspace, and each
order is one ``Workspace.run`` there, in a sandbox of the worker's own, under what is left of the caller's
budget. The finished run goes back as JSON, unstored and ungraded: the caller grades, charges and stores.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from machine.errors import BudgetExceeded
from machine.measure import RunOrder
from machine.runs import Budget, parse_effort
from machine.spec import Case

from ._compose import open_workspace

BUDGET_SPENT = "machine:budget-spent:"
"""What an order answers, instead of a run, when the budget it was given is spent before it starts."""


class Runner:
    """One worker's maker of runs; ``max_concurrency`` orders at once, on its event loop."""

    def __init__(self, harness: str | None, script: str | None, base_url: str | None) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="machine-worker-"))
        root = Path.cwd()  # the shipped folder: machines/ (and any script) as the caller's workspace had them
        self.workspace = open_workspace(
            root, harness=harness, script=None if script is None else root / script, base_url=base_url,
            data_dir=self.data_dir,
        )  # fmt: skip

    async def run(self, order_json: str) -> str:
        order = RunOrder.model_validate_json(order_json)
        ws = self.workspace.using(budget=Budget(order.budget_usd))
        spec = ws.load(order.machine)
        case = None if order.case is None else Case.model_validate(order.case)
        try:
            run = await ws.run(
                spec, order.input, case=case, trial=order.trial, model=order.model,
                effort=parse_effort(order.effort), store=False,
            )  # fmt: skip
        except BudgetExceeded as spent:
            return BUDGET_SPENT + str(spent)
        return run.model_dump_json()

    def where(self) -> dict[str, Any]:
        """Which node and process this runner is (for the caller's report and the tests)."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


__all__ = ["BUDGET_SPENT", "Runner"]
