"""dates: answers calendar questions with the date, on the last line, as YYYY-MM-DD.

Both criteria are checked against the case's known ``answer``: whether the last line names the right
day (written as YYYY-MM-DD, or in words: "March 1, 2024", "1 March 2024"), and whether it is written as
YYYY-MM-DD alone. Its live instructions never say which form to use, so a model that writes dates in
words is right but unreadable by a program: the example ``machine optimize`` learns from.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from machine import Run, check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

ISO = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH = "(" + "|".join(MONTHS) + ")"
# "March 1, 2024" (or "March 1st 2024") and "1 March 2024" (or "1st of March, 2024")
MONTH_FIRST = re.compile(_MONTH + r" ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4})", re.IGNORECASE)
DAY_FIRST = re.compile(r"([0-9]{1,2})(?:st|nd|rd|th)? (?:of )?" + _MONTH + r",? ([0-9]{4})", re.IGNORECASE)


def last_line(text: str) -> str:
    """The last line with something other than whitespace on it ("" if none), without a final full stop."""
    line = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    return line.removesuffix(".").strip()


def _month(name: str) -> int:
    return [m.lower() for m in MONTHS].index(name.lower()) + 1


def read_date(text: str) -> date | None:
    """The last day ``text`` names, as YYYY-MM-DD or in words ("March 1, 2024", "1st of March 2024");
    None if it names none, or only an impossible one (2023-02-29)."""
    text = " ".join(text.split())
    found: list[tuple[int, tuple[int, int, int]]] = []
    for m in ISO.finditer(text):
        found.append((m.start(), (int(m[1]), int(m[2]), int(m[3]))))
    for m in MONTH_FIRST.finditer(text):
        found.append((m.start(), (int(m[3]), _month(m[1]), int(m[2]))))
    for m in DAY_FIRST.finditer(text):
        found.append((m.start(), (int(m[3]), _month(m[2]), int(m[1]))))
    if not found:
        return None
    year, month, day = max(found)[1]
    try:
        return date(year, month, day)
    except ValueError:
        return None


def expected(case: dict[str, Any]) -> date:
    if "answer" not in case:
        raise ValueError("the case has no 'answer' field; add the expected date as YYYY-MM-DD")
    value = case["answer"]
    if not isinstance(value, str) or not ISO.fullmatch(value.strip()):
        raise ValueError(f"the case's answer {value!r} is not a date written as YYYY-MM-DD")
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"the case's answer {value!r} is not a day of the calendar") from None


def correct(run: Run, case: dict[str, Any]) -> tuple[bool, str]:
    """The last line names the expected day, in any of the forms ``read_date`` reads."""
    want, line = expected(case), last_line(run.output)
    if not line:
        return False, "the reply is empty"
    got = read_date(line)
    if got is None:
        return False, f"the last line {line[:80]!r} names no date; expected {want.isoformat()}"
    if got != want:
        return False, f"the last line names {got.isoformat()}; expected {want.isoformat()}"
    return True, f"names {want.isoformat()}"


def iso(run: Run, case: dict[str, Any]) -> tuple[bool, str]:
    """The last line is the expected date alone, written as YYYY-MM-DD."""
    want, line = expected(case).isoformat(), last_line(run.output)
    if line == want:
        return True, f"the last line is {want}"
    if ISO.fullmatch(line):
        return False, f"the last line is {line}, written as YYYY-MM-DD but not the date asked for ({want})"
    return False, f"the last line {line[:80]!r} is not a date alone written as YYYY-MM-DD"


machine = define_machine(
    name="dates",
    intent="Answer questions about calendar dates with the date asked for, on the last line as YYYY-MM-DD.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"correct": check("right_day", correct), "iso": check("iso_form", iso)}
    ),
)
