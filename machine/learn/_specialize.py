"""Specialize: the author machine writes a child of a machine for a focus, and the cases to rehearse it on.

Nothing it writes is trusted. Its files are loaded and their checks tried on the parent's runs in a
process of their own (``vet_child``); what is wrong goes back to it, ``retries`` times; checks that may
measure nothing are sent back once for a second look. Only an accepted child is written into the
workspace. Its cases are then written in batches over the author's own topics, and each is checked
(``vet_cases``: a project's tests run in the sandbox runs use) before it is kept. Refused work (the
budget) stops it where it is: what was written stays, and the report says where it stopped. Nothing is
committed to git."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from machine.errors import BadInputError, BudgetExceeded, Fix, plain_spelling
from machine.runs import Run, check_name, is_free
from machine.spec import Machine, marked
from machine.workspace import Workspace

from ._author_brief import child_brief
from ._authoring import AUTHOR, Authoring, sample_runs
from ._child_files import code_files, read_files, write_child
from ._specialize_cases import CaseWriter
from ._specialize_report import Specialization
from ._vet import vet_child
from ._vetting import Vetting


def slug_of(focus: str) -> str:
    """A child's name part from its focus: its first few words, lower-case, joined by ``-``."""
    words = re.findall(r"[a-z0-9]+", focus.lower())
    slug = "-".join(words[:3])[:40].strip("-")
    return slug or "special"


@dataclass
class Specializer:
    """One specialize call: what it works with and what it has done so far."""

    ws: Workspace
    parent: Machine
    slug: str
    author: Machine
    author_model: str
    model: str | None
    report: Specialization
    retries: int
    timeout_s: float
    where: str = "starting"
    samples: list[Run] = field(default_factory=list)

    @property
    def child(self) -> str:
        return f"{self.parent.name}/{self.slug}"

    @property
    def folder(self) -> Path:
        return self.ws.machines_dir / self.child

    def authoring(self, what: str, part: str) -> Authoring:
        """A conversation with the author whose calls are counted under ``part`` (``child`` or ``cases``)."""

        def charge(usd: float) -> None:
            setattr(self.report.cost, part, getattr(self.report.cost, part) + usd)

        def at(where: str) -> None:
            self.where = where

        async def vet(files: dict[str, str]) -> Vetting:
            return await vet_child(
                self.ws.root, self.parent.name, self.slug, files, model=self.model, samples=self.samples,
                sandboxes=self.ws.sandboxes, timeout_s=self.timeout_s,
            )  # fmt: skip

        return Authoring(
            self.ws, self.author, self.author_model, what, self.retries, read_files, vet, charge, at
        )

    async def find_samples(self) -> None:
        """The parent's stored runs to try the checks on; a few fresh ones when it has none."""
        self.where = f"finding sample runs of {self.parent.name} (running it on its cases if it has none)"
        self.samples, self.report.cost.samples = await sample_runs(self.ws, self.parent)
        if not self.samples:
            self.report.warnings.append(
                f"{self.parent.name} has no stored runs and no case it could run, so the child's checks "
                "were only loaded, not tried on a run"
            )
        self.report.samples = [run.id for run in self.samples]

    async def author_child(self) -> tuple[dict[str, str], Vetting] | None:
        """Ask for the child until its files are accepted (or the retries are spent); write them."""
        authoring = self.authoring(f"the child {self.child!r}", "child")
        brief = child_brief(
            self.parent, focus=self.report.focus, child=self.child, model=self.model, samples=self.samples
        )
        try:
            accepted = await authoring.until_accepted(brief)
        finally:
            self.report.attempts, self.report.second_look = authoring.attempts, authoring.second_look
        if accepted is None:
            self.report.stopped = authoring.refused
            return None
        self.report.accepted, self.report.checks = True, list(accepted.vetting.checks)
        self.report.vetted = accepted.vetting.isolated is True
        if not self.report.vetted:
            why = accepted.vetting.problems[0]
            self.report.warnings.append(f"the child's files were kept unvetted: {why}")
        self._write(accepted.files)
        return accepted.files, accepted.vetting

    def _write(self, files: dict[str, str]) -> None:
        """The accepted files into the child's folder (and its model.json when a model was asked for),
        its code recorded first as a model's, untrusted until the person trusts it."""
        by = f"specialize {self.parent.name} (author {self.author_model})"
        code = {path: marked(text, by, self.child) for path, text in code_files(self.folder, files).items()}
        self.ws.trust.record(self.child, code, by=by)
        write_child(
            self.folder, {**files, **{path.name: text for path, text in code.items()}}, model=self.model
        )
        names = sorted(files) + (["model.json"] if self.model else [])
        self.report.written += [f"machines/{self.child}/{name}" for name in names]
        self.report.untrusted = [f"machines/{self.child}/{path.name}" for path in code]


def _checked(
    ws: Workspace, parent: str, focus: str, slug: str | None, cases: int, holdout_share: float, retries: int
) -> tuple[Machine, str]:
    if not focus.strip():
        raise BadInputError(
            "the focus is empty: say what the child specializes in", fixes=[Fix("focus", "'timezone bugs'")]
        )
    if cases < 1:
        raise BadInputError(
            f"the number of cases must be at least 1, got {cases}", fixes=[Fix("cases", "12")]
        )
    if not 0 <= holdout_share < 1:
        raise BadInputError(
            f"the held-out share must be at least 0 and below 1, got {holdout_share}",
            fixes=[Fix("holdout_share", "0.25")],
        )
    if retries < 0:
        raise BadInputError(f"the retries must be 0 or more, got {retries}", fixes=[Fix("retries", "2")])
    spec = ws.load(parent)
    chosen = (slug or slug_of(focus)).strip()
    if "/" in chosen:
        raise BadInputError(
            f"the slug {chosen!r} has a '/': a child's name under its parent is one part",
            fixes=[Fix("slug", "'datetime'")],
        )
    check_name(f"{parent}/{chosen}", "child name")
    return spec, chosen


def _room(ws: Workspace, parent: str, chosen: str, reuse_cases: bool) -> None:
    """A new child needs a folder of its own; a child whose cases are reused needs its cases."""
    folder = ws.machines_dir / parent / chosen
    if (folder / "machine.py").exists() and not reuse_cases:
        raise BadInputError(
            f"machines/{parent}/{chosen} exists already",
            fixes=[
                Fix("slug", "'another'", "to write a new child"),
                Fix("reuse_cases", purpose="to rewrite only its machine files and keep its cases"),
            ],
        )
    if reuse_cases and not (folder / "cases.json").is_file():
        raise BadInputError(
            f"machines/{parent}/{chosen} has no cases.json to reuse",
            fixes=[Fix("slug", "'another'", "to name a child that has cases")],
        )


async def specialize(
    ws: Workspace,
    parent: str,
    *,
    focus: str,
    slug: str | None = None,
    model: str | None = None,
    author_model: str | None = None,
    cases: int = 12,
    holdout_share: float = 0.25,
    retries: int = 2,
    reuse_cases: bool = False,
    timeout_s: float = 60.0,
) -> Specialization:
    """Have the author write ``PARENT/SLUG``, a child of ``parent`` for ``focus``, and (unless
    ``reuse_cases``) ``cases`` checked cases split into cases.json and holdout.json (see the module)."""
    spec, chosen = _checked(ws, parent, focus, slug, cases, holdout_share, retries)
    _room(ws, parent, chosen, reuse_cases)
    author = ws.load(AUTHOR)
    chosen_model = (author_model or "").strip() or author.model
    if not is_free(ws.harness.name):
        ws.budget.probe_price(chosen_model)  # an unpriced author is refused before anything is paid for
    report = Specialization(
        parent=parent, child=f"{parent}/{chosen}", folder=f"machines/{parent}/{chosen}", focus=focus.strip(),
        author=author.name, author_model=chosen_model, model=model, reused_cases=reuse_cases,
    )  # fmt: skip
    job = Specializer(ws, spec, chosen, author, chosen_model, model, report, retries, timeout_s)
    writer = CaseWriter(job, wanted=cases, holdout_share=holdout_share)
    started = time.monotonic()
    try:
        await job.find_samples()
        child = await job.author_child()
        if child is not None and not reuse_cases:
            await writer.write(*child)
    except BudgetExceeded as refused:
        report.stopped = f"{job.where}: {refused.explain(plain_spelling)}"
    finally:
        writer.save()
        report.seconds = time.monotonic() - started
    report.next_steps = _next_steps(report)
    return report


def _next_steps(report: Specialization) -> list[str]:
    if not report.accepted:
        return [
            f"nothing was written for {report.child}; try again with another author model or more retries"
        ]
    steps = [
        f"machine trust {report.child}: review the code the author wrote and trust it (nothing imports "
        f"it until you do; nothing is committed to git)"
    ]
    if report.kept_cases or report.reused_cases:
        steps += [
            f"machine suite {report.child} --trials 4",
            f"machine train {report.child} --best-of 4",
        ]
    return steps
