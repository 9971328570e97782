"""Where a command's runs are made: here (the default), or elsewhere by a registered executor (a Ray
cluster's workers), found by name in ``EXECUTORS``."""

from __future__ import annotations

from machine._backends import build
from machine.errors import BadInputError, Fix
from machine.measure import MeasureOptions
from machine.workspace import EXECUTORS, Executor, ExecutorSetup, Workspace


def executor_for(
    ws: Workspace,
    name: str,
    *,
    address: str | None = None,
    concurrency: int | None = None,
    harness: str | None = None,
    script: str | None = None,
    base_url: str | None = None,
) -> Executor | None:
    """The executor named (None for one whose runs are made in this process), started and ready (its
    factory starts it); the caller closes it. ``address`` is the cluster's (``host:port``), for an
    executor that takes one."""
    entry = EXECUTORS.named(name)
    if address is not None and not entry.address:
        takers = EXECUTORS.where(lambda other: bool(other.address))
        if takers:
            taker = takers[0]
            raise BadInputError(
                f"{EXECUTORS[taker].address}'s address is for the {taker} executor",
                fixes=[Fix("executor", taker, "to use it")],
            )
        raise BadInputError(f"the {name} executor takes no address")
    at_once = MeasureOptions.default("concurrency") if concurrency is None else concurrency
    setup = ExecutorSetup(ws.root, address, at_once, harness, script, base_url, trust=ws.trust.path)
    return build("executor", name, entry, lambda: entry.make(setup))


__all__ = ["EXECUTORS", "executor_for"]
