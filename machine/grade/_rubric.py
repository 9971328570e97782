"""Rubrics: named, weighted criteria that say what good output looks like."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from machine.errors import DefinitionError

_CRITERION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Criterion:
    """What one criterion asks of a run, and how much it weighs in the score."""

    description: str
    weight: float = 1.0
    required: bool = False
    """Whether the promotion gate holds a candidate to it: one worse on a required criterion is refused
    whatever its mean gained. With no criterion marked, the gate holds every criterion."""


class Rubric(Mapping[str, Criterion]):
    """An ordered, immutable mapping of criterion name to Criterion."""

    def __init__(self, criteria: Mapping[str, Criterion]) -> None:
        self._criteria = dict(criteria)

    def __getitem__(self, name: str) -> Criterion:
        return self._criteria[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._criteria)

    def __len__(self) -> int:
        return len(self._criteria)

    def __repr__(self) -> str:
        return f"Rubric({list(self._criteria)})"

    @cached_property
    def fingerprint(self) -> str:
        """Stable across processes and key order: changes only when a criterion changes."""
        canonical = json.dumps(
            {name: [c.description, float(c.weight)] for name, c in sorted(self._criteria.items())},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def held(self) -> list[str]:
        """The criteria the promotion gate holds a candidate to: those marked required, else all."""
        required = [name for name, c in self._criteria.items() if c.required]
        return required or list(self._criteria)

    def merged(self, other: Rubric) -> Rubric:
        clash = [name for name in other if name in self._criteria]
        if clash:
            raise DefinitionError(f"criterion {clash[0]!r} is defined twice")
        return Rubric({**self._criteria, **other._criteria})


def define_rubric(criteria: Mapping[str, Criterion | Mapping[str, Any] | str]) -> Rubric:
    """Build a rubric from ``{name: Criterion | {"description", "weight"} | description}``."""
    if not isinstance(criteria, Mapping):
        raise DefinitionError("define_rubric takes a mapping of criterion name to criterion")
    built: dict[str, Criterion] = {}
    for name, value in criteria.items():
        if not isinstance(name, str) or not _CRITERION_NAME.match(name):
            raise DefinitionError(
                f"criterion name {name!r} is not valid: use lower-case letters, digits and underscores"
            )
        built[name] = _criterion(name, value)
    return Rubric(built)


def _criterion(name: str, value: Criterion | Mapping[str, Any] | str) -> Criterion:
    if isinstance(value, str):
        value = Criterion(value)
    elif isinstance(value, Mapping):
        unknown = set(value) - {"description", "weight", "required"}
        if unknown or "description" not in value:
            raise DefinitionError(
                f"criterion {name!r} needs a 'description' and an optional 'weight' and 'required'"
                + (f"; unknown keys: {sorted(unknown)}" if unknown else "")
            )
        value = Criterion(value["description"], value.get("weight", 1.0), value.get("required", False))
    if not isinstance(value, Criterion):
        raise DefinitionError(f"criterion {name!r} must be a Criterion, a mapping or a description string")
    if not isinstance(value.description, str) or not value.description.strip():
        raise DefinitionError(f"criterion {name!r} needs a non-empty description")
    weight = value.weight
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not (weight > 0 and math.isfinite(weight))
    ):
        raise DefinitionError(f"criterion {name!r} has weight {weight!r}: a weight must be a positive number")
    if not isinstance(value.required, bool):
        raise DefinitionError(f"criterion {name!r} has required {value.required!r}: use true or false")
    return Criterion(value.description.strip(), float(weight), value.required)
