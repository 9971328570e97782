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
from typing import Any

from machine.errors import BadInputError, BudgetExceeded, Fix, plain_spelling
from machine.runs import check_name
from machine.spec import Machine
from machine.workspace import Workspace

from .._helper_model import FILE_FORM, check_helper_model
from ._authoring import AUTHOR
from ._cases import CaseWriter
from ._options import SpecializeOptions
from ._report import Specialization
from ._specializer import Specializer


def slug_of(focus: str) -> str:
    """A child's name part from its focus: its first few words, lower-case, joined by ``-``."""
    words = re.findall(r"[a-z0-9]+", focus.lower())
    slug = "-".join(words[:3])[:40].strip("-")
    return slug or "special"


def _checked(ws: Workspace, parent: str, focus: str, slug: str | None) -> tuple[Machine, str]:
    """The parent and the child's name part; the numbers are the options' bounds, checked already."""
    if not focus.strip():
        raise BadInputError(
            "the focus is empty: say what the child specializes in", fixes=[Fix("focus", "'timezone bugs'")]
        )
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
    options: SpecializeOptions | None = None,
    **fields: Any,
) -> Specialization:
    """Have the author write ``PARENT/SLUG``, a child of ``parent`` for ``focus``, and (unless
    ``reuse_cases``) ``cases`` checked cases split into cases.json and holdout.json (see the module), as
    ``options`` (or its fields given as keywords) say."""
    o = SpecializeOptions.of(options, **fields)
    focus, model, reuse_cases = o.focus, o.model, o.reuse_cases
    spec, chosen = _checked(ws, parent, focus, o.slug)
    _room(ws, parent, chosen, reuse_cases)
    author = ws.load(AUTHOR)
    chosen_model = (o.author_model or "").strip() or author.model
    await check_helper_model(ws, author, chosen_model, "author_model", FILE_FORM, spec)  # before any spending
    report = Specialization(
        parent=parent,
        child=f"{parent}/{chosen}",
        folder=f"machines/{parent}/{chosen}",
        focus=focus.strip(),
        author=author.name,
        author_model=chosen_model,
        model=model,
        reused_cases=reuse_cases,
    )
    job = Specializer(ws, spec, chosen, author, chosen_model, model, report, o.retries, o.timeout_s)
    writer = CaseWriter(job, wanted=o.cases, holdout_share=o.holdout_share)
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
        f"trust {report.child}: review the code the author wrote and trust it (nothing imports "
        f"it until you do; nothing is committed to git)"
    ]
    if report.kept_cases or report.reused_cases:
        steps += [
            plain_spelling(Fix(operation="suite", machine=report.child, arguments=(("trials", "4"),))),
            plain_spelling(Fix(operation="train", machine=report.child, arguments=(("best_of", "4"),))),
        ]
    return steps
