"""A person's marks on stored runs: tagging one, the newest tagged or observed runs, and whether the
workspace observes outside hosts' runs at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from machine.errors import BadInputError
from machine.runs import Run, Tag, retagged, write_atomic

if TYPE_CHECKING:
    from machine.runs import Store


def tag_run(
    store: Store,
    run: Run,
    kind: str,
    note: str | None = None,
    *,
    answer: str | None = None,
    trace: bool = False,
    reasoning: bool = False,
) -> Run:
    """``run`` marked good, bad or with a correction, and stored. A good mark may carry ``answer`` (the
    final answer to learn instead of its own), ``trace`` (learn its whole trajectory) and ``reasoning``
    (keep its thinking). A good or bad mark replaces the run's earlier one."""
    if kind != "good" and (answer is not None or trace or reasoning):
        raise BadInputError(f"an answer, a trace and reasoning go with a good mark, not a {kind} one")
    if kind not in ("good", "bad", "correction"):
        raise BadInputError(f"a run is marked good, bad or correction, not {kind!r}")
    tag = Tag(kind=kind, note=note, answer=answer, trace=trace, reasoning=reasoning)
    tagged = run.model_copy(update={"tags": retagged(run.tags, tag)})
    store.put(tagged)
    return tagged


def _newest(
    store: Store, machine: str | None, text: str, keep: Callable[[Run], bool], limit: int
) -> list[Run]:
    return list(islice((r for r in store.iter_newest_with(text, machine) if keep(r)), limit))


def tagged_runs(store: Store, machine: str | None = None, limit: int = 20) -> list[Run]:
    """The newest ``limit`` runs (of ``machine``) a person has marked, newest first."""
    return _newest(store, machine, '"kind":"', lambda run: bool(run.tags), limit)


def observed_runs(store: Store, machine: str | None = None, limit: int = 20) -> list[Run]:
    """The newest ``limit`` observed runs (of ``machine``): what outside hosts ran, newest first."""
    return _newest(store, machine, '"observed":true', lambda run: run.observed, limit)


OBSERVE_FILE = "observe.json"
"""In a workspace's ``.machine``: whether ``machine serve`` keeps the runs outside hosts make."""


def observing(data_dir: Path) -> bool:
    """Whether the workspace observes outside hosts' runs (off until a person turns it on)."""
    try:
        return bool(json.loads((data_dir / OBSERVE_FILE).read_text(encoding="utf-8")).get("observe"))
    except (OSError, ValueError, AttributeError):
        return False


def set_observing(data_dir: Path, on: bool) -> None:
    """Turn observing on or off for the workspace (a private file in its ``.machine``)."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(data_dir / OBSERVE_FILE, json.dumps({"observe": on}).encode(), private=True)
