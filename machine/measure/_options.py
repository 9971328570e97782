"""The base of every operation's options, and the options of measuring: one model per operation owns
every option's default, bound and description, so the SDK handle, the command line, the MCP tools and
the machinist's tools, all made from it, cannot drift apart. A value out of bounds is a
``BadInputError`` that names the option and its bound, on every face, in the operation's own terms.

``MeasureOptions`` is what every measurement takes (a suite, a family suite, a comparison, a proposal, a
run's grading): how many runs per case, how many at once, and the score a run needs to pass. The
learners' options take its ``concurrency`` and ``pass_score`` (``MeasureOptions.field``)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Self

from annotated_types import Ge, Gt, Le, Lt
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from machine.errors import BadInputError, Fix
from machine.runs import Model

CONCURRENCY_LIMIT = 500
"""Runs (or grades) at once stay below this: each holds a sandbox, its files and a model call's
connection, and a few hundred at once meet the open-file limit (1,024 by default) before any provider's
rate limit does."""


class Options(Model):
    """Plain data an operation takes; an option no field names is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")
    operation: ClassVar[str] = "this operation"
    """The operation's name, for a message about an option it does not take."""

    @classmethod
    def of(cls, options: Self | None = None, /, **fields: Any) -> Self:
        """``options`` as given (default: every default), with ``fields`` set on it, each checked."""
        if options is not None and not isinstance(options, cls):
            raise BadInputError(
                f"{cls.operation} takes its options as {cls.__name__}, got {type(options).__name__}"
            )
        if not fields:
            return options if options is not None else cls._validated({})
        return cls._validated({**(dict(options) if options is not None else {}), **fields})

    @classmethod
    def _validated(cls, values: dict[str, Any]) -> Self:
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            raise bad_option(cls, error) from None

    def changed(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` whose value is not the default: what was asked for, read the same from a
        record as from a caller (a default dumped and read back counts as left alone)."""
        return [name for name in names if getattr(self, name) != type(self).model_fields[name].default]

    @classmethod
    def bounds(cls, name: str) -> dict[str, float]:
        """Option ``name``'s bounds, as every face shows them: ``ge``, ``gt``, ``le``, ``lt`` as given."""
        return _bounds(cls.model_fields[name])

    @classmethod
    def checked(cls, name: str, value: Any) -> Any:
        """``value`` as option ``name`` takes it (a face checks one option as it reads it)."""
        field = cls.model_fields[name]
        shape: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        try:
            return TypeAdapter(shape).validate_python(value)
        except ValidationError as error:
            raise bad_option(cls, error, name) from None


def _bounds(field: FieldInfo) -> dict[str, float]:
    found: dict[str, float] = {}
    for bound in field.metadata:
        if isinstance(bound, (Ge, Gt, Le, Lt)):
            key = type(bound).__name__.lower()
            found[key] = getattr(bound, key)
    return found


def bad_option(model: type[Options], error: ValidationError, name: str | None = None) -> BadInputError:
    """The first thing ``error`` found wrong with ``model``'s options, as a sentence naming the option and
    its bound (``trials must be a whole number from 1 to 20, got 0``)."""
    first = error.errors(include_url=False)[0]
    loc = [str(part) for part in first["loc"]]
    option = name or (loc[0] if loc else "")
    where = option + "".join(f"[{part}]" for part in loc[0 if name else 1 :])
    value = first.get("input")
    field = model.model_fields.get(option)
    if first["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return BadInputError(f"{model.operation} takes no option {option!r}; its options are: {known}")
    if first["type"] == "missing":
        return BadInputError(f"{model.operation} needs {option}", fixes=[Fix(option, option.upper())])
    number = None if field is None else _number_kind(field)
    if number is not None and field is not None and where == option:
        kind, placeholder = number
        return BadInputError(
            f"{option} must be {kind}{_range(_bounds(field))}, got {_shown(value)}",
            fixes=[Fix(option, placeholder)],
        )
    said = first["msg"][:1].lower() + first["msg"][1:]
    return BadInputError(f"{where} is not valid ({said}), got {_shown(value)}")


def _number_kind(field: FieldInfo) -> tuple[str, str] | None:
    """("a whole number", "N") for an int option, ("a number", "X") for a float one, else None."""
    kinds = set(getattr(field.annotation, "__args__", ())) | {field.annotation}
    if int in kinds:
        return "a whole number", "N"
    if float in kinds:
        return "a number", "X"
    return None


def _range(found: dict[str, float]) -> str:
    """`` from 1 to 20``, `` of at least 0 and below 1``, `` above 0``: the bounds in words."""
    if "ge" in found and "le" in found:
        return f" from {found['ge']:g} to {found['le']:g}"
    words = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}
    parts = [f"{words[key]} {found[key]:g}" for key in ("ge", "gt", "le", "lt") if key in found]
    if not parts:
        return ""
    return (" of " if parts[0].startswith("at") else " ") + " and ".join(parts)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class MeasureOptions(Options):
    """How a measurement runs, the same on every face: ``trials`` runs of each case, ``concurrency`` of
    them at once, each passing at ``pass_score``. Suite, family suite and compare default to 1 trial,
    propose to 3 unless the options say otherwise."""

    operation = "a measurement"

    trials: int = Field(1, ge=1, strict=True, description="Runs per case.")
    concurrency: int = Field(4, ge=1, lt=CONCURRENCY_LIMIT, strict=True, description="Runs at once.")
    pass_score: float = Field(1.0, ge=0, le=1, description="Score a run needs to pass.")

    @classmethod
    def field(cls, name: str) -> Any:
        """Option ``name``'s field (default, bounds, description), for another operation's options that
        take it too: ``concurrency: int = MeasureOptions.field("concurrency")``."""
        return copy.copy(cls.model_fields[name])

    @classmethod
    def taken_from(cls, options: Model) -> Self:
        """The measuring options another operation's ``options`` hold (a training's gate: its trials,
        concurrency and pass score); the others keep their defaults."""
        return cls.of(
            **{
                name: getattr(options, name)
                for name in cls.model_fields
                if name in type(options).model_fields
            }
        )

    @classmethod
    def default(cls, name: str) -> Any:
        """Option ``name``'s default: what a face shows and a caller that leaves it out gets."""
        return cls.model_fields[name].default
