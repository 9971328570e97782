"""The dashboard's JSON: what each page draws, read from the workspace's store, event log, training
records and spending log. Every answer is bounded in what it reads (a page of runs, a machine's newest
runs, per-case sums), so it costs the same at a hundred runs and at a million. Documented for scripts in
docs/dashboard.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from machine.errors import BadInputError
from machine.learn import training_rows, training_shown
from machine.measure.stats import paired
from machine.ops import WorkspaceSpendingLog
from machine.runs import RunFilter
from machine.workspace import Workspace

from ._failures import machine_failures
from ._follow import Follower
from ._machines import machine_rows
from ._pair import pair
from ._review import queue

PAGE_LIMIT = 50
MAX_LIMIT = 500
MOVERS = 10
"""The cases a comparison lists as having moved most."""
FILTER_NAMES = {"case": "case_id", "suite": "suite_id"}
"""Query parameters named otherwise in ``RunFilter``."""


def _limit(params: Mapping[str, str], default: int = PAGE_LIMIT) -> int:
    raw = params.get("limit", str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadInputError(f"limit {raw!r} is not a number from 1 to {MAX_LIMIT}")
    return int(raw)


def run_filter(params: Mapping[str, str]) -> RunFilter:
    """The filter a page's query names (empty values left out); a bad value is refused naming it."""
    given = {FILTER_NAMES.get(k, k): v for k, v in params.items() if v != "" and k not in ("cursor", "limit")}
    try:
        return RunFilter.model_validate(given)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "query"
        raise BadInputError(f"filter {where}: {first['msg']} (got {first.get('input')!r})") from None


class Api:
    """The answers, each a JSON-able value."""

    def __init__(self, ws: Workspace, follower: Follower) -> None:
        self.ws = ws
        self.follower = follower

    def machines(self) -> list[dict[str, Any]]:
        """Every machine with a folder or with stored runs: how many runs it has, its live version, and
        how it does over its newest runs; the one that needs attention first (``_machines``)."""
        return machine_rows(self.ws)

    def runs(self, params: Mapping[str, str]) -> dict[str, Any]:
        cursor = params.get("cursor") or None
        return self.ws.store.page(run_filter(params), cursor=cursor, limit=_limit(params)).model_dump(
            mode="json"
        )

    def run(self, run_id: str) -> dict[str, Any]:
        return self.ws.store.get(run_id).model_dump(mode="json")

    def running(self) -> list[dict[str, Any]]:
        return self.follower.in_progress()

    def machine(self, name: str) -> dict[str, Any]:
        """A machine's trend (its newest runs: when, score, cost) and what its runs can be filtered by."""
        points = [p.model_dump(mode="json") for p in self.ws.store.trend(name)]
        choices = self.ws.store.choices(name).model_dump(mode="json")
        return {"machine": name, "points": points, "choices": choices}

    def failures(self, name: str) -> dict[str, Any]:
        """A machine's newest runs by criterion, and its failing grades grouped by reason (``_failures``)."""
        return machine_failures(self.ws, name)

    def compare(self, params: Mapping[str, str]) -> dict[str, Any]:
        """Two versions (``by=version``) or two suites (``by=suite``) of a machine, case by case: each
        side's per-case mean, the paired difference (b - a) with its standard error, and the cases that
        moved most."""
        machine, by, a, b = (params.get(k, "") for k in ("machine", "by", "a", "b"))
        if not machine or not a or not b or by not in ("version", "suite"):
            raise BadInputError("compare needs machine, by (version or suite), a and b")
        key = "version" if by == "version" else "suite_id"
        sides = [self.ws.store.case_means(machine, **{key: side}) for side in (a, b)]
        stats = paired({c: [m] for c, (m, _) in sides[0].items()}, {c: [m] for c, (m, _) in sides[1].items()})
        cases: list[dict[str, Any]] = []
        for case in sorted(sides[0].keys() | sides[1].keys()):
            left, right = sides[0].get(case), sides[1].get(case)
            diff = None if left is None or right is None else right[0] - left[0]
            cases.append(
                {
                    "case_id": case,
                    "a": None if left is None else left[0],
                    "a_runs": 0 if left is None else left[1],
                    "b": None if right is None else right[0],
                    "b_runs": 0 if right is None else right[1],
                    "diff": diff,
                }
            )
        moved = sorted((c for c in cases if c["diff"]), key=lambda c: -abs(float(c["diff"])))[:MOVERS]
        return {
            "machine": machine, "by": by, "a": a, "b": b, "cases": cases, "moved": moved,
            "diff": stats.diff, "se": stats.se, "z": stats.z, "compared": stats.cases,
            "up": stats.up, "down": stats.down, "p_value": stats.p_value,
        }  # fmt: skip

    def trainings(self, machine: str | None) -> list[dict[str, Any]]:
        return [row.model_dump(mode="json") for row in training_rows(self.ws, machine or None)]

    def training(self, record_id: str) -> dict[str, Any]:
        return training_shown(self.ws, record_id).model_dump(mode="json")

    def pair(self, params: Mapping[str, str]) -> dict[str, Any]:
        """Two runs side by side (``_pair``): any two, related or not; the answer says how they are."""
        missing = [k for k in ("a", "b") if not params.get(k)]
        if missing:
            raise BadInputError(f"a pair needs two run ids: give {' and '.join(missing)} (`?a=ID&b=ID`)")
        return pair(self.ws.store.get(params["a"]), self.ws.store.get(params["b"])).model_dump(mode="json")

    def review(self, params: Mapping[str, str]) -> dict[str, Any]:
        """The next runs of a machine waiting for a verdict, of one kind (``_review``)."""
        machine = params.get("machine", "")
        if not machine:
            raise BadInputError("the review queue needs a machine (`?machine=NAME&kind=failing`)")
        return queue(self.ws, machine, params.get("kind", "failing"), params.get("cursor") or None)

    def spending(self, params: Mapping[str, str]) -> dict[str, Any]:
        """The newest entries of the spending log, newest first, and their total: a line ``within``
        another shown here (a session's tool call, within the session's line) is counted in that one."""
        entries = WorkspaceSpendingLog(self.ws).newest(_limit(params, 200))
        shown = {e.get("correlation_id") for e in entries}
        total = sum(float(e.get("spent_usd") or 0.0) for e in entries if e.get("within") not in shown)
        return {"entries": entries, "total_usd": total}


__all__ = ["Api", "run_filter"]
