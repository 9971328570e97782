"""Drafting a rubric: the author machine proposes criteria and graders for a machine from its intent, its
files and its stored runs. The draft is vetted like a child's files (loaded in a process of its own, its
checks tried on the sample runs) and, once accepted, written beside the machine as ``rubric_draft.py``
for the person to accept by hand: nothing the machine is graded on changes until they do."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from machine.errors import BadInputError, BudgetExceeded, Fix, plain_spelling
from machine.spec import marked
from machine.workspace import Workspace

from .._helper_model import FILE_FORM, check_helper_model
from ._authoring import AUTHOR, Authoring, sample_runs
from ._brief import draft_brief
from ._files import AuthoredFiles, file_text, read_files
from ._options import DraftRubricOptions
from ._report import Attempt
from .vetting import DRAFT_FILE, CheckResult, Vetting, vet_rubric


class RubricDraft(BaseModel):
    """The report of one ``draft_rubric`` call."""

    machine: str
    author: str
    author_model: str
    file: str
    """Where the draft is (or would be) written, relative to the workspace."""
    samples: list[str] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    accepted: bool = False
    vetted: bool = False
    """Whether the draft was loaded and its checks tried in an isolated sandbox before it was kept."""
    replaced: bool = False
    """An earlier draft was there and is replaced by this one."""
    criteria: list[str] = Field(default_factory=list)
    judged: list[str] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    second_look: list[str] = Field(default_factory=list)
    cost_usd: float = 0.0
    seconds: float = 0.0
    stopped: str | None = None
    warnings: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)


async def draft_rubric(
    ws: Workspace, name: str, options: DraftRubricOptions | None = None, **fields: Any
) -> RubricDraft:
    """Have the author draft a rubric for machine ``name`` and write it beside it (see the module), as
    ``options`` (or its fields given as keywords) say."""
    o = DraftRubricOptions.of(options, **fields)
    retries, timeout_s = o.retries, o.timeout_s
    spec = ws.load(name)
    if ws.loader.is_builtin(name):
        raise BadInputError(
            f"{name!r} is a machine of the library: copy it into machines/{name} to change it"
        )
    author = ws.load(AUTHOR)
    chosen = (o.author_model or "").strip() or author.model
    await check_helper_model(ws, author, chosen, "author_model", FILE_FORM, spec)
    report = RubricDraft(
        machine=name, author=author.name, author_model=chosen, file=f"machines/{name}/{DRAFT_FILE}"
    )
    where = f"finding sample runs of {name} (running it on its cases if it has none)"

    def at(doing: str) -> None:
        nonlocal where
        where = doing

    def charge(usd: float) -> None:
        report.cost_usd += usd

    started = time.monotonic()
    try:
        samples, report.cost_usd = await sample_runs(ws, spec)
        report.samples = [run.id for run in samples]

        async def vet(files: dict[str, str]) -> Vetting:
            return await vet_rubric(
                ws.root, name, files[DRAFT_FILE], samples=samples, sandboxes=ws.sandboxes, timeout_s=timeout_s
            )

        what = f"the rubric draft of {name!r}"
        authoring = Authoring(ws, author, chosen, what, retries, _draft_files, vet, charge, at)
        try:
            accepted = await authoring.until_accepted(
                draft_brief(spec, samples=samples, draft_file=DRAFT_FILE)
            )
        finally:
            report.attempts, report.second_look = authoring.attempts, authoring.second_look
        if accepted is None:
            report.stopped = authoring.refused
        else:
            _write(ws, report, accepted.files[DRAFT_FILE], accepted.vetting)
    except BudgetExceeded as refused:
        report.stopped = f"{where}: {refused.explain(plain_spelling)}"
    report.seconds = time.monotonic() - started
    return report


def _draft_files(text: str) -> AuthoredFiles:
    """The rubric draft in the author's reply: that one file, and no other."""
    return read_files(text, allowed=(DRAFT_FILE,), required=(DRAFT_FILE,))


def _write(ws: Workspace, report: RubricDraft, text: str, vetting: Vetting) -> None:
    path = ws.root / report.file
    report.replaced = path.exists()
    by = f"draft-rubric {report.machine} (author {report.author_model})"
    written = marked(file_text(text), by, report.machine, draft=True)
    ws.trust.record(report.machine, {path: written}, by=by, draft=True)
    path.write_text(written, encoding="utf-8")
    report.accepted, report.vetted = True, vetting.isolated is True
    if not report.vetted:
        report.warnings.append(f"the draft was kept unvetted: {vetting.problems[0]}")
    report.criteria, report.judged, report.checks = vetting.own, vetting.judged, vetting.checks
    report.next_steps = [
        f"read {report.file}; to adopt it, put its rubric in rubric.py and its graders in machine.py's "
        "define_evaluator (nothing the machine is graded on changes until you do; nothing may import the "
        f"draft itself until you trust it: {plain_spelling(Fix(operation='trust', machine=report.machine))})",
        f"then {plain_spelling(Fix(operation='suite', machine=report.machine))}: it grades its runs on the "
        "new rubric",
    ]
