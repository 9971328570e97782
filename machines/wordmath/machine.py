"""wordmath: solves word problems and puts the answer on its last line.

The answer is known for every case, so correctness is checked by code: a cheap, exact signal that
makes the passing runs usable as training data (see wordmath/fullwidth).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from machine import Run, check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

# Fullwidth ASCII forms (U+FF01..FF5E) read as their ASCII twins, so "１，２５０．" is 1,250.
# Only this block is folded: NFKC would also turn "m²" into "m2" and invent a number.
_FULLWIDTH_TO_ASCII = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}

# A number: an optional minus (ASCII or U+2212) that is not glued to a word before it, digits grouped
# by commas in threes or not grouped at all, and an optional decimal part. A trailing "." is not a
# decimal part, so "1,250." reads as 1250.
NUMBER = re.compile(
    r"(?:(?<![\w.])[-\u2212])?(?<![0-9.,])(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?"
)


def last_line(text: str) -> str:
    """The last line with something other than whitespace on it ("" if none)."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def parse_number(token: str) -> Decimal:
    return Decimal(token.replace(",", "").replace("\u2212", "-"))


def final_number(text: str) -> Decimal | None:
    """The last number on the last non-empty line of ``text``, or None if that line has none."""
    found = NUMBER.findall(last_line(text).translate(_FULLWIDTH_TO_ASCII))
    return parse_number(found[-1]) if found else None


def expected_answer(case: dict[str, Any]) -> Decimal:
    """The case's ``answer`` (a number, or a string holding one)."""
    if "answer" not in case:
        raise ValueError("the case has no 'answer' field; add the known answer to the case")
    value = case["answer"]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"the case's answer {value!r} is not a number")
    try:
        return parse_number(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"the case's answer {value!r} is not a number") from None


def correct(run: Run, case: dict[str, Any]) -> tuple[bool, str]:
    """The last number on the last non-empty line equals the case's answer, compared as numbers."""
    want = expected_answer(case)
    got = final_number(run.output)
    if got is None:
        line = last_line(run.output)
        if not line:
            return False, "the reply is empty"
        return False, f"no number on the last line {line[:80]!r}; expected {want}"
    if got == want:
        return True, f"answered {got}"
    return False, f"answered {got}; expected {want}"


machine = define_machine(
    name="wordmath",
    intent="Solve arithmetic word problems and state the numeric answer on the last line.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"correct": check("final_answer", correct)}),
)
