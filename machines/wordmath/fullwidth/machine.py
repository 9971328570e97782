"""wordmath/fullwidth: wordmath that reasons in fullwidth letters and digits.

It keeps wordmath's `correct` criterion, so only right answers in the right script pass. Its
transform_reasoning rewrites a run's reasoning into fullwidth on export, which turns the parent's
correct runs into training data for thinking this way.
"""

from __future__ import annotations

from machine import Run, check, define_child, define_evaluator, instructions_from

from ..machine import machine as parent
from .fullwidth import is_ascii_alnum, is_fullwidth_alnum, to_fullwidth
from .rubric import rubric


def fullwidth_reasoning(run: Run) -> tuple[bool, str]:
    """Non-empty reasoning with at least one fullwidth letter or digit and no ASCII ones."""
    text = run.reasoning
    if not text.strip():
        return False, "no reasoning was captured"
    ascii_positions = [i for i, char in enumerate(text) if is_ascii_alnum(char)]
    if ascii_positions:
        first = ascii_positions[0]
        near = text[max(first - 10, 0) : first + 20]
        return (
            False,
            f"{len(ascii_positions)} ASCII letters or digits in the reasoning, the first in {near!r}",
        )
    fullwidth = sum(1 for char in text if is_fullwidth_alnum(char))
    if fullwidth == 0:
        return False, "the reasoning has no fullwidth letters or digits"
    return True, f"{fullwidth} fullwidth letters and digits, no ASCII ones"


machine = define_child(
    parent,
    name="wordmath/fullwidth",
    intent="Solve word problems like wordmath while reasoning entirely in fullwidth letters and digits.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"fullwidth_reasoning": check("fullwidth", fullwidth_reasoning)}),
    transform_reasoning=to_fullwidth,
)
