"""Written cases vetted before any is kept: nothing an author writes is trusted.

Each case is checked for its shape (``_case_shape``); a project case is then run for real in the
workspace's sandboxes, as runs are (isolated by bubblewrap where it works): its tests must fail on the
starting files and pass with the reference fix, and each hidden test must do the same run alone.
Duplicates of a kept or existing case are dropped. Every case gets a verdict saying what was checked,
or why it was discarded.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from machine.errors import HarnessError, MachineError
from machine.runs import RunnerOutcome, Sandboxes, alone, runner_outcome
from machine.spec import Case
from machine.workspace import Workspace

from .._shape import CaseShape, Draft, Refused, case_id, draft, same_key

PARALLEL = 4
"""Cases checked at once (each runs its commands one after another)."""


class CaseVerdict(BaseModel):
    """What became of one written case: kept, or discarded and why."""

    id: str
    kept: bool
    reason: str
    """Why it was discarded, or what was checked ("tests fail before (2 of 3 failed), pass after ...")."""
    seconds: float = 0.0


class CaseVetting(BaseModel):
    """The cases kept (hidden tests taken out), their hidden tests for ``hidden.json``, and a verdict for
    every case in the order given."""

    kept: list[dict[str, Any]] = []
    hidden: dict[str, dict[str, Any]] = {}
    """``{case_id: {"files": {name: text}}}``: the kept cases' hidden tests, never shown to the machine."""
    verdicts: list[CaseVerdict] = []
    check_seconds: float = 0.0
    """Time spent in sandboxes, summed over cases."""
    isolated: bool | None = None
    """Whether every sandbox command was isolated; None when no case needed a sandbox."""

    @property
    def discarded(self) -> list[CaseVerdict]:
        return [v for v in self.verdicts if not v.kept]


class CapReached(Exception):
    """A case's commands reached a cap of sandboxed commands: the case is discarded, with which."""

    def __init__(self, caps: list[str], stderr: str) -> None:
        notes = [line for line in stderr.splitlines() if line.startswith("[") and line.endswith("]")]
        said = f" ({'; '.join(note.strip('[]') for note in notes[-len(caps) :])})" if notes else ""
        super().__init__(
            f"its commands reached the sandbox's cap on {' and '.join(caps)}{said}: a case's tests must run "
            "within the caps of sandboxed commands"
        )


class _Checked:
    """One case's verdict so far, and its sandbox time."""

    def __init__(self, ident: str) -> None:
        self.id = ident
        self.draft: Draft | None = None
        self.reason = ""
        self.ok = False
        self.seconds = 0.0
        self.sandbox_seconds = 0.0
        self.isolated: list[bool] = []


async def vet_cases(
    ws: Workspace,
    shape: CaseShape,
    cases: Sequence[dict[str, Any]],
    *,
    existing: Sequence[Case] = (),
    timeout_s: float = 60.0,
) -> CaseVetting:
    """Check each written case against ``shape``, running project cases in sandboxes (each command
    bounded by ``timeout_s``), and keep those that pass and repeat no kept or ``existing`` case."""
    taken = {case.id for case in existing}
    checked: list[_Checked] = []
    for index, raw in enumerate(cases):
        item = _Checked(case_id(raw, taken) if isinstance(raw, dict) else f"case-{index + 1}")
        started = time.monotonic()
        try:
            item.draft = draft(shape, raw, item.id)
        except Refused as refused:
            item.reason = f"the case {refused}"
        item.seconds = time.monotonic() - started
        checked.append(item)
    drafts = [item for item in checked if item.draft is not None]
    if shape.project and drafts:
        await _run_all(ws, shape, drafts, timeout_s)
    else:
        for item in drafts:
            item.ok, item.reason = True, _plain_reason(shape, item)
    return _decide(checked, existing)


def _plain_reason(shape: CaseShape, item: _Checked) -> str:
    fields = ", ".join(shape.required)
    found = "has an input" + (f" and {fields}" if fields else "")
    notes = "; ".join(item.draft.notes) if item.draft else ""
    return found + (f"; {notes}" if notes else "")


def _decide(checked: list[_Checked], existing: Sequence[Case]) -> CaseVetting:
    """Verdicts in order, a duplicate of an earlier kept case (or an existing one) discarded."""
    seen = {same_key(case.input, case.files): case.id for case in existing}
    vetting = CaseVetting()
    for item in checked:
        ok, reason = item.ok, item.reason
        if ok and item.draft is not None:
            key = same_key(item.draft.case["input"], item.draft.starting)
            if key in seen:
                ok, reason = False, f"repeats case {seen[key]!r} (the same input and files)"
            else:
                seen[key] = item.id
                vetting.kept.append(item.draft.case)
                if item.draft.hidden:
                    vetting.hidden[item.id] = {"files": dict(item.draft.hidden)}
        vetting.verdicts.append(
            CaseVerdict(id=item.id, kept=ok, reason=reason, seconds=round(item.seconds, 3))
        )
        vetting.check_seconds += item.sandbox_seconds
    isolated = [flag for item in checked for flag in item.isolated]
    vetting.isolated = all(isolated) if isolated else None
    vetting.check_seconds = round(vetting.check_seconds, 3)
    return vetting


def _sandboxes(ws: Workspace) -> Sandboxes:
    sandboxes = ws.sandboxes
    if sandboxes is None:
        raise HarnessError(
            "this workspace was made without sandboxes, so project cases cannot be checked: open it with "
            "machine.open_workspace, which makes them"
        )
    return sandboxes


async def _run_all(ws: Workspace, shape: CaseShape, drafts: list[_Checked], timeout_s: float) -> None:
    boxes = _sandboxes(ws)
    root = ws.sandbox_dir / f"vet-{uuid.uuid4().hex[:12]}"
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(item: _Checked) -> None:
        async with limiter:
            started = time.monotonic()
            checker = _Project(boxes, root, shape, timeout_s, item)
            try:
                item.ok, item.reason = await checker.check()
            except CapReached as reached:
                item.ok, item.reason = False, str(reached)
            except MachineError as error:
                item.ok, item.reason = False, f"could not be checked in a sandbox: {error}"
            item.seconds += time.monotonic() - started

    try:
        async with anyio.create_task_group() as group:
            for item in drafts:
                group.start_soon(one, item)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class _Project:
    """The sandbox checks of one project case, each command in a fresh sandbox."""

    def __init__(
        self, boxes: Sandboxes, root: Path, shape: CaseShape, timeout_s: float, item: _Checked
    ) -> None:
        assert item.draft is not None
        self.boxes, self.root, self.shape, self.timeout_s = boxes, root, shape, timeout_s
        self.item, self.draft = item, item.draft

    async def run(self, files: Mapping[str, str], command: str) -> RunnerOutcome:
        """``command`` in a fresh scratch sandbox seeded with ``files`` (what it writes is capped and
        thrown away), removed afterwards; CapReached when it reached a cap of sandboxed commands."""
        started = time.monotonic()
        box = self.boxes.for_scratch(self.root, f"c-{uuid.uuid4().hex[:12]}", dict(files))
        try:
            if not box.isolated:  # the author's tests and fix are code nobody has read
                raise HarnessError(
                    "the sandbox is not isolated (bubblewrap is missing or cannot make namespaces here), so "
                    "the author's tests were not run: install bubblewrap (`apt-get install bubblewrap`)"
                )
            done = await box.exec(f"PYTHONDONTWRITEBYTECODE=1 {command}", timeout_s=self.timeout_s)
        finally:
            box.remove()
            self.item.sandbox_seconds += time.monotonic() - started
        self.item.isolated.append(bool(box.isolated))
        reached = [cap for cap in getattr(done, "reached", ()) if cap != "time"]  # time: said by the checks
        if reached:
            raise CapReached(reached, str(getattr(done, "stderr", "")))
        return runner_outcome(
            getattr(done, "exit_code", None),
            str(getattr(done, "stdout", "")),
            str(getattr(done, "stderr", "")),
            timed_out=bool(getattr(done, "timed_out", False)),
        )

    async def check(self) -> tuple[bool, str]:
        """Whether the case is kept, and what was found."""
        command = str(self.draft.case["tests"])
        before = await self.run(self.draft.starting, command)
        if before.timed_out:
            return False, f"its tests timed out on the starting files (after {self.timeout_s:g} s)"
        if self.draft.starts is not None:  # a case to answer: its tests start as it says
            said = {"pass": "passing", "fail": "failing"}
            started = "pass" if before.passed else "fail"
            if started != self.draft.starts:
                told = f"it says its tests start {said[self.draft.starts]}, and they start {said[started]}"
                return False, f"{told} ({before.describe()})"
            return (
                True,
                f"a case to answer: its tests start {said[started]}, as it says ({before.describe()})",
            )
        if before.passed:
            return (
                False,
                f"its tests pass before the fix ({before.describe()}): they must fail on the starting files",
            )
        after = await self.run(self.draft.fixed, command)
        if not after.passed:
            return False, f"its tests fail with the reference applied ({after.why()})"
        found = f"tests fail before ({before.describe()}), pass after the reference ({after.describe()})"
        for name in sorted(self.draft.hidden):
            problem = await self.hidden(name)
            if problem is not None:
                return False, problem
        names = sorted(self.draft.hidden)
        if len(names) == 1:
            found += f"; hidden test {names[0]} fails alone before and passes after"
        elif names:
            found += f"; hidden tests {', '.join(names)} each fail alone before and pass after"
        return True, "; ".join([found, *self.draft.notes])

    async def hidden(self, name: str) -> str | None:
        """Why the hidden test ``name`` does not hold (None when it fails alone before and passes after)."""
        command = alone(self.shape.hidden_command, name)
        text = self.draft.hidden[name]
        before = await self.run({**self.draft.starting, name: text}, command)
        if before.timed_out:
            return f"hidden test {name} timed out alone on the starting files (after {self.timeout_s:g} s)"
        if before.passed:
            return (
                f"hidden test {name} passes alone before the fix ({before.describe()}): it must fail on the "
                "starting files"
            )
        after = await self.run({**self.draft.fixed, name: text}, command)
        if not after.passed:
            return f"hidden test {name} fails alone with the reference applied ({after.why()})"
        return None
