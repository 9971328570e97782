"""Harnesses and stores by name (``machine._backends``' registry shape): the entries adapters declare
through the ``machine.harnesses`` and ``machine.stores`` entry points, and the core's questions to them
(which harness to use, whether its runs are free or replayed, which store opens a location)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from machine._backends import HARNESS_GROUP, STORE_GROUP, Backend, build, declared_free, registry
from machine.errors import BadInputError

if TYPE_CHECKING:
    from ._harness import Harness
    from ._store import Store

HARNESS_ENV = "MACHINE_HARNESS"


@dataclass(frozen=True)
class HarnessSetup:
    """What a harness factory is given: a script to replay, an endpoint's URL, and the model the runs will
    use, when known."""

    script: str | Path | None = None
    base_url: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class HarnessEntry(Backend):
    """How to make one harness, and what it declares: runs that cost nothing (no model, or one in this
    process), runs that replay a script rather than a model's own replies."""

    make: Callable[[HarnessSetup], Harness]
    free: bool = False
    replays: bool = False


@dataclass(frozen=True)
class StoreEntry(Backend):
    """How to open one kind of store at a location, and which locations are its (a URL scheme); the default
    entry opens every other location (a file)."""

    make: Callable[[str], Store]
    claims: Callable[[str], bool] = lambda _location: False


HARNESSES = registry(HARNESS_GROUP, HarnessEntry, "harness")
"""Every harness by name, from the ``machine.harnesses`` entry points (assign one to add it at run time)."""
STORES = registry(STORE_GROUP, StoreEntry, "store")
"""Every store by name, from the ``machine.stores`` entry points."""


def default_harness_name(model: str | None = None) -> str:
    """The harness used when none is named: ``MACHINE_HARNESS``, else the one that serves ``model`` (a
    ``local:`` model: the local harness), else the one declared the default."""
    if os.environ.get(HARNESS_ENV):
        return os.environ[HARNESS_ENV]
    name = HARNESSES.serving(model)
    if name is None:
        raise BadInputError(f"no harness is the default: name one of {', '.join(HARNESSES)}")
    return name


def make_harness(
    name: str | None = None,
    *,
    script: str | Path | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> Harness:
    """The harness called ``name`` (default: see ``default_harness_name``; ``model`` is the model the runs
    will use, when known); one whose extra is missing, or that cannot be made (no key, no script, no
    program), says what to do."""
    name = name or default_harness_name(model)
    if name not in HARNESSES:
        raise BadInputError(f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}")
    entry = HARNESSES[name]
    return build("harness", name, entry, lambda: entry.make(HarnessSetup(script, base_url, model)))


def is_free(harness: str) -> bool:
    """Whether runs of this harness cost nothing (so no price is needed for them), as it declares."""
    return declared_free(harness)


def is_replayed(harness: str) -> bool:
    """Whether runs of this harness replay a script (no model produced them), as it declares."""
    entry = HARNESSES.get(harness)
    return entry is not None and entry.replays


def serves_only(harness: str) -> str | None:
    """The model ids this harness runs, and runs alone (a prefix, ``local:``), None when it runs any."""
    entry = HARNESSES.get(harness)
    return None if entry is None else entry.serves


def store_claiming(location: str) -> str | None:
    """The store that claims ``location`` (a URL of its scheme), None for a file the default store opens."""
    return next((name for name, entry in STORES.loaded() if entry.claims(location)), None)


def default_store() -> tuple[str, StoreEntry]:
    """The store that opens a file (the embedded default)."""
    name = STORES.serving(None)
    if name is None:
        raise BadInputError(f"no store is the default: the stores are {', '.join(STORES)}")
    return name, STORES[name]


__all__ = [
    "HARNESSES",
    "HARNESS_ENV",
    "STORES",
    "HarnessEntry",
    "HarnessSetup",
    "StoreEntry",
    "default_harness_name",
    "default_store",
    "is_free",
    "is_replayed",
    "make_harness",
    "serves_only",
    "store_claiming",
]
