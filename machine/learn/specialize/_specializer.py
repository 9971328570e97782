"""One specialize call as it goes: what it works with, what it has done so far and where it is (said
when refused work stops it), shared by the child's authoring and the writing of its cases."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from machine.runs import Run
from machine.spec import Machine, marked
from machine.workspace import Workspace

from ._authoring import Authoring, sample_runs
from ._brief import child_brief
from ._files import code_files, read_files, write_child
from ._report import Specialization
from .vetting import Vetting, vet_child


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
                self.ws.root,
                self.parent.name,
                self.slug,
                files,
                model=self.model,
                samples=self.samples,
                sandboxes=self.ws.sandboxes,
                timeout_s=self.timeout_s,
            )

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
