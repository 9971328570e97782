"""julia/parametric: Julia whose types and methods take type parameters, so one definition serves
every element type."""

from __future__ import annotations

from machine import define_child, define_evaluator, instructions_from

from ..machine import machine as parent
from ..program import on_program
from ..source import type_parameters
from .rubric import rubric


def declares_type_parameters(code: str) -> tuple[bool, str]:
    found = type_parameters(code)
    if not found:
        return False, "declares no type parameters: no where-clause, no parametric struct or abstract type"
    what, line = found[0]
    more = f" ({len(found)} in all)" if len(found) > 1 else ""
    return True, f"{what} on line {line}{more}"


machine = define_child(
    parent,
    name="julia/parametric",
    intent="Write Julia that is parametric: type parameters let one definition serve every element type.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"type_parameters": on_program("type_parameters", declares_type_parameters)}
    ),
)
