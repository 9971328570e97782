"""The measuring flags (``--trials``, ``--concurrency``, ``--pass-score``), bounded and defaulted by
``MeasureOptions`` as the SDK and the MCP tools are; apart from the shared options so that a command that
measures nothing (``machine list``) loads no measuring code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from machine.measure import MeasureOptions

F = TypeVar("F", bound=Callable[..., Any])


def _measure_range(name: str) -> Any:
    """Click's range for ``MeasureOptions``'s option ``name``: its bounds, as the SDK and the MCP tools
    check them."""
    bounds = MeasureOptions.bounds(name)
    low, high = bounds.get("ge"), bounds.get("le", bounds.get("lt"))
    if isinstance(MeasureOptions.default(name), int):
        least, most = (None if bound is None else int(bound) for bound in (low, high))
        return click.IntRange(least, most, max_open="lt" in bounds)
    return click.FloatRange(low, high, max_open="lt" in bounds)


def trials_option(help: str, default: int | None = None) -> Callable[[F], F]:
    """``--trials``, bounded as ``MeasureOptions`` bounds it (``default``: its default, 1)."""
    chosen = MeasureOptions.default("trials") if default is None else default
    return click.option(
        "--trials", type=_measure_range("trials"), default=chosen, show_default=True, help=help
    )


def measuring(trials: int, concurrency: int, pass_score: float) -> MeasureOptions:
    """The measuring flags a command was given, as the one options model the operations take."""
    return MeasureOptions.of(trials=trials, concurrency=concurrency, pass_score=pass_score)


concurrency_option = click.option(
    "--concurrency",
    type=_measure_range("concurrency"),
    default=MeasureOptions.default("concurrency"),
    show_default=True,
    help="Runs (or grades) at once.",
)


pass_score_option = click.option(
    "--pass-score",
    type=_measure_range("pass_score"),
    default=MeasureOptions.default("pass_score"),
    show_default=True,
    help="The score a run needs to pass, from 0 to 1.",
)
