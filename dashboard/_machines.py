"""The machines page's rows: every machine with a folder or with stored runs, each with how it does over
its newest runs (the store's ``health``, summed by the database) and its live version, sorted so the one
that needs attention comes first. Bounded: one index walk of a fixed window per machine, and each
machine's versions.json read as it is (never written: a dashboard only looks)."""

from __future__ import annotations

from typing import Any

from machine.errors import MachineError
from machine.ops import list_machines
from machine.runs import HEALTH_WINDOW
from machine.spec import VERSIONS_FILE, read_book
from machine.workspace import Workspace


def live_version(ws: Workspace, name: str) -> str | None:
    """The label of ``name``'s live version (``v3``); None when it has no versions.json, or one that
    cannot be read (the machine's own commands say what is wrong with it)."""
    try:
        book = read_book(ws.machines_dir / name / VERSIONS_FILE)
        return None if book is None else book.live.label
    except (MachineError, OSError):
        return None


def attention(row: dict[str, Any]) -> tuple[int, float, int, str]:
    """The lowest pass rate first; a machine with no decided run after every one that has; ties: the
    one with more runs first, then by name."""
    health = row.get("health") or {}
    rate = health.get("pass_rate")
    return (rate is None, 0.0 if rate is None else rate, -int(row["runs"]), row["name"])


def machine_rows(ws: Workspace) -> list[dict[str, Any]]:
    """The machines page's rows, the one that needs attention first."""
    counts = ws.store.machine_counts()
    listed = {m.name: m.model_dump(mode="json") for m in list_machines(ws)}
    for name in counts.keys() - listed.keys():
        listed[name] = {"name": name, "error": None, "intent": None, "stored_only": True}
    rows: list[dict[str, Any]] = []
    for name, row in listed.items():
        health = ws.store.health(name, HEALTH_WINDOW) if name in counts else None
        rows.append(
            {
                **row,
                "runs": counts.get(name, 0),
                "live_version": live_version(ws, name),
                "health": None if health is None else health.model_dump(mode="json"),
            }
        )
    return sorted(rows, key=attention)


__all__ = ["attention", "live_version", "machine_rows"]
