"""The child's cases: the author lists topics within the focus, then writes cases over them in batches;
each case is checked (``vet_cases``) before it is kept, until enough are kept or the batches allowed are
spent. What is kept is split into cases.json and holdout.json (and hidden.json for hidden tests) as soon
as the writing ends, however it ends."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from machine.errors import MachineError, plain_spelling
from machine.runs import counted, new_run_id
from machine.spec import DEFAULT_MIN_Z, Case
from machine.versions import evidence_floor, thin_gate

from .._replies import read_cases, read_topics
from ._brief import cases_brief, shape_lines, topics_brief
from ._shape import CaseShape, case_shape
from ._specializer import Specializer
from ._split import split_cases
from .vetting import CaseVerdict, Vetting, hidden_tests_grader, vet_cases

BATCH = 4
"""Cases asked for in one reply."""
SHOWN_PARENT_CASES = 2
GATE_FLOOR = evidence_floor(DEFAULT_MIN_Z)
"""The held-out cases the child gets at least (6), wherever more are kept: fewer, and no candidate of
it could pass the gate at the default ``min_z``, however much better it was."""


def most_batches(wanted: int) -> int:
    """The case batches the author may be asked for: twice what ``wanted`` needs, and one more."""
    return 2 * math.ceil(wanted / BATCH) + 1


def _hidden(job: Specializer, vetting: Vetting) -> bool:
    """Whether the child is graded with held-back tests: one of its checks, or its parent's, is one."""
    inherited = any(hidden_tests_grader(g) for g in job.parent.evaluator.graders.values())
    return bool(vetting.hidden_tests) or inherited


class CaseWriter:
    """Writes the child's cases for ``job``: ``wanted`` kept at most, ``holdout_share`` of them held out."""

    def __init__(self, job: Specializer, *, wanted: int, holdout_share: float) -> None:
        self.job, self.wanted, self.share = job, wanted, holdout_share
        self.kept: list[dict[str, Any]] = []
        self.hidden: dict[str, dict[str, Any]] = {}
        self.started = False
        self.author = job.authoring(f"the cases of {job.child}", "cases")

    async def write(self, files: dict[str, str], vetting: Vetting) -> None:
        job, report = self.job, self.job.report
        self.started = True
        try:
            parent_cases = job.ws.cases(job.parent)
        except MachineError:
            parent_cases = []
        try:
            shape = case_shape(job.parent, parent_cases, _hidden(job, vetting))
        except MachineError as error:  # hidden tests on a machine whose cases are not projects
            report.stopped = f"writing the cases: {error.explain(plain_spelling)}"
            return
        said = shape_lines(parent_cases[:SHOWN_PARENT_CASES], shape)
        report.topics = await self._topics(files)
        batches = most_batches(self.wanted)
        for number in range(batches):
            if len(self.kept) >= self.wanted:
                return
            topics = self._deal(report.topics, number)
            job.where = f"asking the author for cases (batch {number + 1} of at most {batches})"
            text = cases_brief(
                job.parent,
                job.child,
                files,
                focus=report.focus,
                topics=topics,
                count=min(BATCH, self.wanted - len(self.kept)),
                shape=said,
                avoid=[str(c.get("input", "")) for c in self.kept],
            )
            run = await self.author.ask(text, [], new_run_id())
            if run.status == "error":
                report.stopped = f"{job.where}: the author's call failed ({run.error})"
                return
            await self._vet(run.output, shape, parent_cases)
        if len(self.kept) < self.wanted:
            report.warnings.append(
                f"{len(self.kept)} of the {counted(self.wanted, 'case')} asked for were kept after "
                f"{counted(batches, 'batch', 'batches')}"
            )

    async def _topics(self, files: dict[str, str]) -> list[str]:
        job = self.job
        job.where = "asking the author for the topics of the cases"
        text = topics_brief(job.parent, job.child, files, focus=job.report.focus, count=self.wanted)
        run = await self.author.ask(text, [], new_run_id())
        topics = read_topics(run.output) if run.status == "ok" else []
        return topics or [job.report.focus]

    def _deal(self, topics: Sequence[str], number: int) -> list[str]:
        start = (number * BATCH) % len(topics)
        return [topics[(start + i) % len(topics)] for i in range(min(BATCH, len(topics)))]

    async def _vet(self, reply: str, shape: CaseShape, parent_cases: list[Case]) -> None:
        report = self.job.report
        parsed, unreadable = read_cases(reply)
        report.cases += [
            CaseVerdict(id=f"block {i + 1}", kept=False, reason=r) for i, r in enumerate(unreadable)
        ]
        existing = parent_cases + [Case.model_validate(c) for c in self.kept]
        self.job.where = f"checking {len(parsed)} of the author's cases"
        started = time.monotonic()
        vetting = await vet_cases(self.job.ws, shape, parsed, existing=existing, timeout_s=self.job.timeout_s)
        report.check_seconds += time.monotonic() - started
        report.cases += vetting.verdicts
        kept = {case["id"]: case for case in vetting.kept}  # ids unique among these and the existing ones
        for verdict in vetting.verdicts:
            if not verdict.kept or verdict.id not in kept:
                continue
            if len(self.kept) >= self.wanted:
                verdict.kept = False
                verdict.reason = f"passed its checks, but the {self.wanted} cases asked for were kept already"
                continue
            self.kept.append(kept[verdict.id])
            if verdict.id in vetting.hidden:
                self.hidden[verdict.id] = vetting.hidden[verdict.id]

    def save(self) -> None:
        """Split what was kept into cases.json and holdout.json (and hidden.json), in the child's folder."""
        job, report = self.job, self.job.report
        if not self.started or not self.kept:
            return
        cases, holdout = split_cases(self.kept, self.share, seed=job.child, floor=GATE_FLOOR)
        out = {"cases.json": cases, "holdout.json": holdout}
        if self.hidden:
            out["hidden.json"] = self.hidden  # type: ignore[assignment]
        for name, data in out.items():
            if name == "holdout.json" and not data:
                continue
            path = job.folder / name
            path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            report.written.append(f"machines/{job.child}/{name}")
        report.kept_cases, report.holdout_cases = len(cases), len(holdout)
        thin = thin_gate(len(holdout), DEFAULT_MIN_Z, where="holdout.json")
        if thin:  # too few were kept to hold out enough: the person adds cases before training on it
            report.warnings.append(thin)
        report.hidden_cases = len(self.hidden)
