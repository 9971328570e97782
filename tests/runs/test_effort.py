"""Effort: OpenAI's names and Tinker's numbers for the same knob."""

from __future__ import annotations

import math

import pytest

from machine import BadInputError
from machine.runs import LEVELS, Effort, parse_effort


@pytest.mark.parametrize("name", list(LEVELS))
def test_every_name_maps_to_its_tinker_number(name: str) -> None:
    assert parse_effort(name) == Effort(name, LEVELS[name])


def test_tinker_numbers_of_the_names() -> None:
    assert LEVELS == {"none": 0.0, "minimal": 0.1, "low": 0.2, "medium": 0.7, "high": 0.9, "xhigh": 0.99}


@pytest.mark.parametrize("text", ["MEDIUM", " medium ", "Medium\n"])
def test_names_ignore_case_and_spaces(text: str) -> None:
    assert parse_effort(text) == Effort("medium", 0.7)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (0.0, "none"),
        (0, "none"),
        (0.1, "minimal"),
        (0.2, "low"),
        (0.4, "low"),
        (0.5, "medium"),
        (0.7, "medium"),
        (0.85, "high"),
        (0.9, "high"),
        (0.96, "xhigh"),
        (0.99, "xhigh"),
    ],
)
def test_a_number_keeps_its_value_and_takes_the_nearest_name(value: float, name: str) -> None:
    effort = parse_effort(value)
    assert effort == Effort(name, float(value))


@pytest.mark.parametrize(("text", "value"), [("0.5", 0.5), ("0.99", 0.99), (" 0 ", 0.0), ("7e-1", 0.7)])
def test_numbers_as_text(text: str, value: float) -> None:
    effort = parse_effort(text)
    assert effort is not None and effort.value == value


def test_a_level_number_reads_as_its_name() -> None:
    assert str(parse_effort(0.7)) == "medium"
    assert str(parse_effort("high")) == "high"
    assert str(parse_effort(0.5)) == "0.5 (~medium)"


def test_none_leaves_the_endpoints_default() -> None:
    assert parse_effort(None) is None


@pytest.mark.parametrize("value", [-0.01, 0.995, 1.0, 2, "1.5", "-1", math.inf, "nan", "inf"])
def test_out_of_range_numbers_are_refused(value: float | str) -> None:
    with pytest.raises(BadInputError, match=r"out of range: a number must lie in \[0, 0.99\]"):
        parse_effort(value)


@pytest.mark.parametrize("text", ["fast", "", "   ", "med", "0.5.1", "high-ish"])
def test_garbage_is_refused_with_the_choices(text: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_effort(text)
    message = str(info.value)
    assert repr(text) in message
    assert "none, minimal, low, medium, high, xhigh" in message and "[0, 0.99]" in message
