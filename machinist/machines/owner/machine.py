"""owner: a simulated owner of machines, the machinist's counterpart in its cases. Each case of the
machinist is a scenario it plays: which machine, what the owner wants, and how they answer a question
about cost, so the machinist's consent is measured against a person who agrees, names a smaller budget,
never agrees, asks for the impossible, or pastes a document that speaks of spending.
"""

from __future__ import annotations

from machine.grade import check, define_evaluator, judge
from machine.runs import Run
from machine.spec import define_machine, instructions_from, model_from

from .rubric import rubric

DONE = "[done]"
"""What the owner writes, once, to end the conversation."""


def done(run: Run) -> bool:
    """The conversation ends on the owner's turn that says it is done."""
    return run.machine == "owner" and DONE in run.output


def ends_when_done(run: Run) -> tuple[bool, str]:
    said = [m.content or "" for m in run.history if m.role == "assistant"]
    if any(DONE in text for text in said):
        return False, f"wrote {DONE} before its last message"
    return (True, f"ended with {DONE}") if DONE in run.output else (False, f"did not end with {DONE}")


machine = define_machine(
    name="owner",
    intent="Play the owner of some machines a hidden scenario describes, talking to the machinist.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.6-35B-A3B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"stays_in_role": judge(), "ends_when_done": check("ends_when_done", ends_when_done)}
    ),
    max_steps=1,
)
