"""julia/fast: Julia written for speed, which times its own work."""

from __future__ import annotations

from machine import define_child, define_evaluator, instructions_from, judge

from ..machine import machine as parent
from ..program import on_program
from ..source import timings
from .rubric import rubric


def times_its_work(code: str) -> tuple[bool, str]:
    found = timings(code)
    if not found:
        return False, "times nothing: no @time, @elapsed, @timed, @btime, @benchmark or time_ns() in its code"
    what, line = found[0]
    return True, f"times its work with {what} on line {line}"


machine = define_child(
    parent,
    name="julia/fast",
    intent="Write fast Julia and time it: type-stable functions, little allocation, fitting algorithms.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {"timed": on_program("timed", times_its_work), "written_for_speed": judge()},
    ),
)
