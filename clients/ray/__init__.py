"""Suites on a Ray cluster (``--executor ray``, the ``ray`` extra): each run is made by a worker that opens
the same workspace, with the machine's folder sent once and the budget kept on the caller's side.
Registered as the ``ray`` executor (``ENTRY``, through the ``machine.executors`` entry points)."""

from __future__ import annotations

from machine.workspace import ExecutorEntry, ExecutorSetup

from ._executor import RayExecutor


def _started(setup: ExecutorSetup) -> RayExecutor:
    options = {"harness": setup.harness, "script": setup.script, "base_url": setup.base_url}
    made = RayExecutor(setup.root, setup.address, **options, concurrency=setup.concurrency, trust=setup.trust)
    made.start()
    return made


ENTRY = ExecutorEntry(
    _started, extra="ray", modules=("ray",), address="a Ray cluster", makes="machine.clients.ray:RayExecutor"
)
"""The ray executor: runs go to a Ray cluster's workers."""

__all__ = ["ENTRY", "RayExecutor"]
