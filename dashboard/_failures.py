"""A machine's failures first: its newest runs broken down by criterion (mean, pass rate, unscored, fails:
the store's ``health``) and its failing grades grouped by the grader's reason (the store's ``failing``,
grouped by ``group_failures``), so a person sees the few ways it fails before the many runs that show them.
Bounded like the machines page: two index walks of a fixed window, and at most ``MAX_GROUPS`` groups of
cut reasons, whatever the store holds."""

from __future__ import annotations

from typing import Any

from machine.errors import MachineError, NotFoundError
from machine.runs import HEALTH_WINDOW, RUN_FAILED, check_name, group_failures
from machine.workspace import Workspace


def _worst_first(row: dict[str, Any]) -> tuple[bool, float, float, str]:
    """The lowest pass rate first (a criterion never scored last), then the lowest mean."""
    rate, mean = row["pass_rate"], row["mean"]
    return (rate is None, 0.0 if rate is None else rate, 2.0 if mean is None else mean, row["criterion"])


def _has_folder(ws: Workspace, name: str) -> bool:
    """Whether ``name`` is a machine's name with a folder in the workspace (a name that is not one is
    never looked up on disk)."""
    try:
        check_name(name)
    except MachineError:
        return False
    return (ws.machines_dir / name).is_dir()


def machine_failures(ws: Workspace, name: str, window: int = HEALTH_WINDOW) -> dict[str, Any]:
    """``name``'s criteria, worst first, and its failures grouped by reason, over its newest ``window``
    runs; a machine with neither a folder nor runs is not found."""
    health = ws.store.health(name, window)
    if not health.runs and not _has_folder(ws, name):
        raise NotFoundError(
            f"there is no machine {name!r}: no folder in {ws.machines_dir} and no stored runs"
        )
    criteria = [c.model_dump(mode="json") for c in health.criteria]
    grouped = group_failures(ws.store.failing(name, window)).model_dump(mode="json")
    for group in grouped["groups"]:  # the runs page's filter that lists the group's runs among others
        group["outcome"] = "error" if group["criterion"] == RUN_FAILED else "fail"
    return {
        "machine": name,
        "window": health.window,
        "runs": health.runs,
        "errors": health.errors,
        "criteria": sorted(criteria, key=_worst_first),
        **grouped,
    }


__all__ = ["machine_failures"]
