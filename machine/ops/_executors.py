"""Where a command's runs are made: here (the default), or on a Ray cluster's workers."""

from __future__ import annotations

from machine.errors import BadInputError, Fix
from machine.workspace import Executor, Workspace

from ._ray_executor import RayExecutor

EXECUTORS = ("local", "ray")


def executor_for(
    ws: Workspace,
    name: str,
    *,
    address: str | None = None,
    concurrency: int = 4,
    harness: str | None = None,
    script: str | None = None,
    base_url: str | None = None,
) -> Executor | None:
    """The executor named (None for ``local``: runs are made in this process), started and ready; the
    caller closes it. ``address`` is the Ray head's (``host:port``), for ``ray``."""
    if name == "local":
        if address is not None:
            raise BadInputError(
                "a Ray cluster's address is for the ray executor", fixes=[Fix("executor", "ray", "to use it")]
            )
        return None
    if name != "ray":
        raise BadInputError(f"there is no executor {name!r}: choose one of {', '.join(EXECUTORS)}")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise BadInputError("the ray executor needs Ray: pip install 'machine[ray]'") from None
    made = RayExecutor(ws.root, address, harness, script, base_url, concurrency, trust=ws.trust.path)
    made.start()
    return made


__all__ = ["EXECUTORS", "executor_for"]
