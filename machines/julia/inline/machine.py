"""julia/inline: Julia written as short-form (or @inline) functions only."""

from __future__ import annotations

from machine import define_child, define_evaluator, instructions_from

from ..machine import machine as parent
from ..program import on_program
from ..source import definitions
from .rubric import rubric


def short_or_inline(code: str) -> tuple[bool, str]:
    defined = definitions(code)
    named = [d for d in defined if d.name and d.form != "anonymous"]
    if not named:
        return False, "defines no named function"
    long_form = [d for d in defined if d.form == "long" and not d.inline]
    if long_form:
        first = long_form[0]
        label = f"function {first.name}" if first.name else "an anonymous function ... end"
        more = f" ({len(long_form)} in all)" if len(long_form) > 1 else ""
        return False, f"line {first.line}: {label} is a function ... end block without @inline{more}"
    noinline = [d for d in defined if d.noinline]
    if noinline:
        return False, f"line {noinline[0].line}: {noinline[0].name or 'a function'} is marked @noinline"
    short = sum(1 for d in named if d.form == "short")
    return True, f"{short} short-form and {len(named) - short} @inline function definitions, nothing else"


machine = define_child(
    parent,
    name="julia/inline",
    intent="Write Julia whose functions are all one-line short forms, or marked @inline.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"short_or_inline": on_program("short_or_inline", short_or_inline)}),
)
