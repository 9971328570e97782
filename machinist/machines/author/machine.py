"""author: the machine ``machine specialize`` asks to write a child machine and the cases to rehearse it on,
and ``machine draft-rubric`` asks for a rubric.

It ships with the library; a workspace that defines its own ``author`` machine uses that one instead (copy
this folder into ``machines/author`` to change how it is asked). Nothing it writes is trusted: every file
is loaded in a separate process and checked, and every case is checked, before anything is kept.
"""

from __future__ import annotations

import re

from machine.grade import check, define_evaluator
from machine.runs import Run
from machine.spec import define_machine, instructions_from, model_from

from .rubric import rubric

DEFAULT_MODEL = "thinkingmachines/Inkling"
_BLOCK = re.compile(r"<(file|case|topic)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)


def in_blocks(run: Run) -> tuple[bool, str]:
    found = [m.group(1).lower() for m in _BLOCK.finditer(run.output)]
    if not found:
        return False, "no <file>, <case> or <topic> block in the reply"
    kinds = ", ".join(f"{found.count(kind)} {kind}" for kind in sorted(set(found)))
    return True, f"answers in blocks ({kinds})"


machine = define_machine(
    name="author",
    intent=(
        "Write a specialist child of a machine for a focus, with checks that really measure it and cases "
        "that really test it, in the blocks the library reads."
    ),
    instructions=instructions_from(__file__),
    model=model_from(__file__, DEFAULT_MODEL),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"in_blocks": check("in_blocks", in_blocks)}),
    max_steps=1,
)
