"""optimizer: the machine ``machine optimize`` asks for rewrites of another machine's instructions.

It ships with the library; a workspace that defines its own ``optimizer`` machine uses that one instead
(copy this folder into ``machines/optimizer`` to change how proposals are asked for). Its runs are stored
and graded like any machine's, so what it cost and whether it answered in shape can be read back.
"""

from __future__ import annotations

from machine.grade import check, define_evaluator
from machine.learn.optimize import read_reply
from machine.runs import Run
from machine.spec import define_machine, instructions_from, model_from

from .rubric import rubric

DEFAULT_MODEL = "thinkingmachines/Inkling"


def proposes(run: Run) -> tuple[bool, str]:
    reply = read_reply(run.output)
    if reply.instructions is None:
        return False, "no non-empty <instructions> block in the reply"
    if reply.blocks > 1:
        return False, f"{reply.blocks} <instructions> blocks; one is asked for (the last was taken)"
    return True, "one proposal"


def explains(run: Run) -> tuple[bool, str]:
    said = read_reply(run.output).explanation
    if len(said.split()) < 5:
        return False, "nothing (or next to nothing) said outside the block about what changed"
    return True, "says what it changed"


machine = define_machine(
    name="optimizer",
    intent="Rewrite a machine's instructions so that it meets its rubric on cases it has not seen.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, DEFAULT_MODEL),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"proposes": check("one_block", proposes), "explains": check("explanation", explains)}
    ),
    max_steps=1,
)
