"""Vetting a child machine an author model wrote, without trusting it.

The workspace's machines are copied into a fresh sandbox (``_sandboxed``), the author's files are written
there, and the vetting process (``vetting._main``, ``vetting._draft``) loads the child or the draft and runs
its checks on sample runs inside it. Where the sandbox is not isolated, nothing the author wrote is run.
The author's code is never imported in the calling process; what vetting reports is advice to the author,
not trust (``machine trust``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

from machine.errors import BadInputError, NotFoundError
from machine.runs import NAME_SEGMENT, Run, Sandboxes

from .._files import REQUIRED_FILES, path_problem, write_child
from ._draft import DRAFT_FILE
from ._result import Vetting
from ._sandboxed import CHECK_SECONDS, MEMORY_BYTES, NOT_ISOLATED, Limits, Process, run_sandboxed

CHILD = Process("machine.learn.specialize.vetting._main", "vetting the child", Vetting)
DRAFT = Process("machine.learn.specialize.vetting._draft", "vetting the rubric draft", Vetting)
__all__ = ["CHECK_SECONDS", "MEMORY_BYTES", "NOT_ISOLATED", "vet_child", "vet_rubric"]


async def vet_child(
    root: Path,
    parent: str,
    slug: str,
    files: Mapping[str, str],
    *,
    model: str | None,
    samples: Sequence[Run],
    sandboxes: Sandboxes | None,
    timeout_s: float = 60.0,
    check_timeout_s: float = CHECK_SECONDS,
    memory_bytes: int = MEMORY_BYTES,
) -> Vetting:
    """Whether the child ``PARENT/SLUG`` that ``files`` define loads as a child of ``parent`` on ``model``
    and its checks grade ``samples`` without raising, found out in a sandbox within ``timeout_s``."""
    started = time.monotonic()
    machines = Path(root) / "machines"
    _check_names(machines, parent, slug)
    refused = [f"{path!r} cannot be written: {why}" for path in files if (why := path_problem(path))]
    refused += [f"the child has no {name}: write one" for name in REQUIRED_FILES if name not in files]
    if refused:
        return Vetting(ok=False, problems=refused, model=model, seconds=time.monotonic() - started)
    request = {"parent": parent, "slug": slug, "model": model}
    vetting = await _vetted(
        machines,
        request,
        samples,
        CHILD,
        sandboxes,
        Limits(timeout_s, check_timeout_s, memory_bytes),
        lambda copy: write_child(copy / parent / slug, files, model=model),
    )
    return vetting.model_copy(update={"model": model, "seconds": time.monotonic() - started})


async def vet_rubric(
    root: Path,
    name: str,
    draft: str,
    *,
    samples: Sequence[Run],
    sandboxes: Sandboxes | None,
    timeout_s: float = 60.0,
    check_timeout_s: float = CHECK_SECONDS,
    memory_bytes: int = MEMORY_BYTES,
) -> Vetting:
    """Whether ``draft`` (the text of rubric_draft.py) defines a rubric and graders that fit machine
    ``name`` and whose checks grade ``samples`` without raising, found out as a child's files are."""
    started = time.monotonic()
    machines = Path(root) / "machines"
    if not (machines / name / "machine.py").is_file():
        raise NotFoundError(
            f"there is no machine {name!r} to draft a rubric for (no {machines / name}/machine.py)"
        )

    def write(copy: Path) -> None:
        (copy / name / DRAFT_FILE).write_text(draft, encoding="utf-8")

    request = {"parent": name, "name": name, "model": None}
    limits = Limits(timeout_s, check_timeout_s, memory_bytes)
    vetting = await _vetted(machines, request, samples, DRAFT, sandboxes, limits, write)
    return vetting.model_copy(update={"seconds": time.monotonic() - started})


async def _vetted(
    machines: Path,
    request: Mapping[str, object],
    samples: Sequence[Run],
    process: Process,
    sandboxes: Sandboxes | None,
    limits: Limits,
    write: Callable[[Path], None],
) -> Vetting:
    """The author's files vetted by ``process`` on a sandboxed copy of ``machines``, with the samples."""
    dumped = [run.model_dump(mode="json") for run in samples]
    found = await run_sandboxed(
        machines, {**request, "samples": dumped}, process, sandboxes=sandboxes, limits=limits, write=write
    )
    return cast(Vetting, found)


def _check_names(machines: Path, parent: str, slug: str) -> None:
    if not NAME_SEGMENT.match(slug):
        raise BadInputError(
            f"the child's slug {slug!r} is not a machine name: use lower-case letters, digits, '-' and '_'"
        )
    if not (machines / parent / "machine.py").is_file():
        raise NotFoundError(
            f"there is no machine {parent!r} to specialize (no {machines / parent}/machine.py)"
        )
