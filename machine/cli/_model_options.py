"""Click options made from a learning operation's options model, so a flag's default, range and help are
the model's and cannot drift from the SDK's or the MCP tool's: each field becomes ``--flag-name`` (its
name with ``-`` for ``_``, unless the command names it otherwise), typed and ranged by the field's
bounds, with the field's default and description. Each value is checked by the model as it is read (a
bad one is click's ``Invalid value`` line), and the command is handed the options as one model, whose
``model_fields_set`` holds the flags given (a default left alone is not given)."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click
from click.core import ParameterSource

from machine.errors import BadInputError
from machine.learn import Options

from ._options import fail

F = TypeVar("F", bound=Callable[..., Any])


class CommaList(click.ParamType[list[str], Any]):
    """``q_proj, v_proj`` as ``["q_proj", "v_proj"]``: a list option given as one comma-separated word."""

    name = "names"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return [str(part) for part in value]
        return [part.strip() for part in str(value).split(",") if part.strip()]


def model_options(
    model: type[Options],
    *,
    skip: Collection[str] = (),
    flags: Mapping[str, str] | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    into: str = "options",
) -> Callable[[F], F]:
    """An option per field of ``model`` (but those in ``skip``, which the command declares itself), named
    as ``flags`` says where it says; ``extra`` adds click arguments (a metavar) to a field's option. The
    command gets the checked model as its argument ``into``."""
    names = [name for name in model.model_fields if name not in skip]

    def apply(command: F) -> F:
        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names if name in kwargs}
            source = click.get_current_context().get_parameter_source
            given = {k: v for k, v in given.items() if source(k) is not ParameterSource.DEFAULT}
            try:
                kwargs[into] = model.of(**given)
            except BadInputError as error:
                fail(error)
            return command(*args, **kwargs)

        decorated: Any = with_options
        for name in reversed(names):
            flag = (flags or {}).get(name, "--" + name.replace("_", "-"))
            made = {**option_kwargs(model, name), **(extra or {}).get(name, {})}
            decorated = click.option(flag, name, **made)(decorated)
        return decorated  # type: ignore[no-any-return]

    return apply


def option_kwargs(model: type[Options], name: str) -> dict[str, Any]:
    """Click's arguments for the option of ``model``'s field ``name``: its type and range, default, help,
    and a check of each value by the model."""
    field = model.model_fields[name]
    shape = _one_type(field.annotation)
    kwargs: dict[str, Any] = {"help": field.description, "callback": _checker(model, name)}
    if field.is_required():
        kwargs["required"] = True
    else:
        kwargs["default"] = field.default
        kwargs["show_default"] = field.default is not None and field.default is not False
    if shape is bool:
        kwargs["is_flag"] = True
    elif shape is int or shape is float:
        kwargs["type"] = _ranged(shape, model.bounds(name))
    elif get_origin(shape) is Literal:
        kwargs["type"] = click.Choice([str(choice) for choice in get_args(shape)])
    elif get_origin(shape) is list:
        kwargs["type"] = CommaList()
    return kwargs


def _one_type(annotation: Any) -> Any:
    """The type a command line gives for ``annotation``: the one that is not None, ``str`` of several
    (a file name of ``str | Path | list[Case]``)."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return annotation
    members = [member for member in get_args(annotation) if member is not type(None)]
    return str if len(members) > 1 and str in members else members[0]


def _ranged(shape: type[int] | type[float], bounds: Mapping[str, float]) -> click.ParamType[Any, Any]:
    """``click.IntRange``/``FloatRange`` of the bounds (``INT``/``FLOAT`` without any)."""
    if not bounds:
        return click.INT if shape is int else click.FLOAT
    low, high = bounds.get("ge", bounds.get("gt")), bounds.get("le", bounds.get("lt"))
    opened = {"min_open": "gt" in bounds, "max_open": "lt" in bounds}
    if shape is int:
        return click.IntRange(
            None if low is None else int(low), None if high is None else int(high), **opened
        )
    return click.FloatRange(low, high, **opened)


def _checker(model: type[Options], name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that checks a value as the model would, refusing it as click refuses a value."""

    def check(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return model.checked(name, value)
        except BadInputError as error:
            raise click.BadParameter(error.message) from None

    return check
