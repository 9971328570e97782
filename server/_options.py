"""A learning tool's arguments made from its operation's options model, so the input schema the SDK builds
from the tool's signature has the model's defaults, bounds and descriptions, and cannot drift from the
command line's or the SDK handle's. The SDK reads a tool's parameters with ``inspect.signature`` and its
annotations with ``typing.get_type_hints``; the tool function takes the options as ``**options`` and is
given a signature that names each of them.

No ``from __future__ import annotations`` here: the annotations made are objects the SDK reads at run time.
"""

import inspect
from collections.abc import Callable, Collection
from typing import Annotated, Any, TypeVar

from pydantic import Field, Strict

from machine.errors import MachineError
from machine.learn import Options

from ._service import tool_error

F = TypeVar("F", bound=Callable[..., Any])
Opts = TypeVar("Opts", bound=Options)


def option_arguments(model: type[Options], *, leave: Collection[str] = ()) -> Callable[[F], F]:
    """Give a tool function that takes ``**options`` a keyword argument per field of ``model``, but those
    it declares itself (with the bounds of a tool's string arguments) and those in ``leave`` (which a
    tool's caller does not choose: the model's default holds)."""

    def apply(fn: F) -> F:
        signature = inspect.signature(fn)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        taken = {p.name for p in own}
        added = [_argument(model, name) for name in model.model_fields if name not in {*leave, *taken}]
        fn.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        fn.__annotations__ = {**fn.__annotations__, **{p.name: p.annotation for p in added}}
        return fn

    return apply


def accepted(model: type[Options], *own: str, leave: Collection[str] = ()) -> tuple[str, ...]:
    """Every argument a tool made with ``option_arguments(model, leave=leave)`` takes: its ``own`` and the
    options', so an error's fixes that name any of them are spelt for the caller (``samples: 4``)."""
    return (*own, *(name for name in model.model_fields if name not in leave))


def _argument(model: type[Options], name: str) -> inspect.Parameter:
    """Field ``name`` as a tool argument: its type and bounds, its description, its default. A caller's
    JSON is read as leniently as any tool argument (``2.0`` for a whole number too)."""
    field = model.model_fields[name]
    kept = [bound for bound in field.metadata if not isinstance(bound, Strict)]
    annotation: Any = Annotated[(field.annotation, *kept, Field(description=field.description))]
    default = inspect.Parameter.empty if field.is_required() else field.default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def options_of(kind: type[Opts], accepts: tuple[str, ...], /, **fields: Any) -> Opts:
    """The tool's arguments as options of ``kind``, checked; a value it refuses is the tool's error."""
    try:
        return kind.of(**fields)
    except MachineError as error:
        raise tool_error(error, accepts=accepts) from error
