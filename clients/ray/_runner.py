"""What a Ray worker runs (an actor per node): the machines folder it was shipped is its workspace, and each
order is one run made there (``Workspace.make``), in a sandbox of the worker's own, under what is left of
the caller's budget. The finished run goes back as JSON, unstored and ungraded: the caller grades, charges
and stores. A machine from another folder is loaded from that folder, unpacked once per worker.

Code a model wrote is imported here as it is by the caller: only if its content is one the person trusted.
The caller ships its record of trusted files (``trust.json``: paths and sha256s) with the runner, which
keeps it as its own, so every file is checked again on the worker against what was trusted; one that
differs is refused (``REFUSED``, with the reason), failing closed.
"""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from machine.budget import Budget
from machine.errors import BudgetExceeded, DefinitionError
from machine.ops import open_workspace
from machine.runs import write_atomic
from machine.spec import TRUST_FILE, Machine, MachineLoader, TrustBook
from machine.workspace import RunOrder

BUDGET_SPENT = "machine:budget-spent:"
"""What an order answers, instead of a run, when the budget it was given is spent before it starts."""
REFUSED = "machine:refused:"
"""What an order answers, instead of a run, when its machine cannot be loaded here (code a model wrote
that differs from what the person trusted, say), with the reason."""


class Runner:
    """One worker's maker of runs; ``max_concurrency`` orders at once, on its event loop."""

    def __init__(
        self, harness: str | None, script: str | None, base_url: str | None, trusted: bytes | None = None
    ) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="machine-worker-"))
        if trusted is not None:  # the caller's record of trusted files, as this worker's own
            write_atomic(self.data_dir / TRUST_FILE, trusted, private=True)
        root = Path.cwd()  # the shipped folder: machines/ (and any script) as the caller's workspace had them
        self.workspace = open_workspace(
            root,
            harness=harness,
            script=None if script is None else root / script,
            base_url=base_url,
            data_dir=self.data_dir,
        )
        self.loaders: dict[str, asyncio.Future[MachineLoader]] = {}

    async def run(self, order_json: str, sent: tuple[str, list[Any]] | None = None) -> str:
        order = RunOrder.model_validate_json(order_json)
        ws = self.workspace.using(budget=Budget(order.budget_usd))
        loader = self.workspace.loader if sent is None else await self._loader(*sent)
        try:
            spec: Machine = loader.load(order.run.machine)
        except DefinitionError as refused:  # NotTrusted among them: said in words, not a traceback
            return REFUSED + refused.message
        if spec.instructions != order.run.instructions:  # a proposal's, or a version's, as the caller had it
            spec = replace(spec, instructions=order.run.instructions)
        try:
            run = await ws.make(spec, order.run, files=order.files)
        except BudgetExceeded as spent:
            return BUDGET_SPENT + str(spent)
        return run.model_dump_json()

    def _loader(self, key: str, packed: list[Any]) -> asyncio.Future[MachineLoader]:
        """The loader of a folder the caller sent, unpacked on its first order (once, however many wait)."""
        if key not in self.loaders:
            self.loaders[key] = asyncio.ensure_future(self._unpacked(key, packed[0]))
        return self.loaders[key]

    async def _unpacked(self, key: str, ref: Any) -> MachineLoader:
        data: bytes = await ref
        folder = self.data_dir / "sent" / key
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(folder, filter="data")
        trust = TrustBook(self.data_dir / TRUST_FILE, folder / "machines")
        return MachineLoader(folder / "machines", builtins=True, trust=trust)

    def where(self) -> dict[str, Any]:
        """Which node and process this runner is (for the caller's report and the tests)."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


__all__ = ["BUDGET_SPENT", "REFUSED", "Runner"]
