"""julia/generic: Julia functions that work on any type that supports what they do.

The check reads the argument declarations of every function the program defines (see
``source.concrete_arguments`` for what counts as concrete); whether the program shows its functions on
several input types takes judgement."""

from __future__ import annotations

from machine import define_child, define_evaluator, instructions_from, judge

from ..machine import machine as parent
from ..program import on_program
from ..source import concrete_arguments, definitions
from .rubric import rubric


def no_concrete_arguments(code: str) -> tuple[bool, str]:
    defined = definitions(code)
    if not any(d.arguments.strip() for d in defined if d.form != "anonymous"):
        return False, "defines no function that takes arguments, so there is nothing generic to grade"
    found = concrete_arguments(code)
    if found:
        first = found[0]
        concrete = " and ".join(dict.fromkeys(first.concrete))
        more = f"; {len(found) - 1} more" if len(found) > 1 else ""
        where = f"line {first.line}: {first.definition} declares `{first.argument}`"
        return False, f"{where} ({concrete} is concrete){more}"
    named = sum(1 for d in defined if d.form != "anonymous")
    return True, f"{named} function definition{'s' if named != 1 else ''}, none with a concrete argument type"


machine = define_child(
    parent,
    name="julia/generic",
    intent="Write generic Julia: functions that accept any type supporting the operations they use.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "no_concrete_arguments": on_program("no_concrete_arguments", no_concrete_arguments),
            "shown_on_several_types": judge(),
        },
    ),
)
