"""The answer typed to the program's question: ``y``/``yes``, optionally with a smaller amount in USD;
anything else, an empty line included, is a no."""

from __future__ import annotations

import pytest

from machine.cli._approve import parse_answer


@pytest.mark.parametrize(
    ("typed", "usd"),
    [("y", None), ("yes", None), (" Yes ", None), ("Y.", None), ("y 2", 2.0), ("yes, up to $2", 2.0),
     ("y $0.25", 0.25), ("yes 0.5 dollars", 0.5), ("yes, at most 1.5 USD", 1.5)],
)  # fmt: skip
def test_a_yes_with_or_without_a_smaller_amount(typed: str, usd: float | None) -> None:
    answer = parse_answer(typed)
    assert answer.yes and answer.usd == usd and answer.said == typed.strip()


@pytest.mark.parametrize(
    "typed",
    ["", "n", "no", "yes please do", "ok", "sure", "go ahead", "y 0.5 thanks", "yes no", "yess", "y -1",
     "\x1b[Ay", "not yes"],
)  # fmt: skip
def test_anything_else_is_a_no(typed: str) -> None:
    assert not parse_answer(typed).yes
