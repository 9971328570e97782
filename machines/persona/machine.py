"""persona: a simulated user. It plays the person its hidden scenario describes, talking to another machine.

It is a counterpart (see ``machines/chatbot/machine.py``): each of the other machine's cases is a scenario,
persona speaks first, and the conversation ends once it writes DONE. Whether it stays in role takes
judgement, so a judge grades it; leaking the scenario and ending properly are decided by code.
"""

from __future__ import annotations

import re

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from

from .rubric import rubric

DONE = "[done]"
"""What persona writes, once, to end the conversation."""

# Phrases by which a simulated user gives itself away.
_LEAKS = re.compile(
    r"\b(simulat(ed|ing|ion)|as an ai|i am an ai|i'm an ai|language model|my instructions|"
    r"my scenario|the scenario|my role|role-?play)\b",
    re.IGNORECASE,
)


def own_messages(run: Run) -> list[str]:
    """Everything persona said in the conversation so far, this turn's reply last."""
    said = [m.content for m in run.history if m.role == "assistant" and m.content]
    return [*said, run.output]


def keeps_secret(run: Run) -> tuple[bool, str]:
    for text in own_messages(run):
        found = _LEAKS.search(text.replace("\u2019", "'"))
        if found:
            return False, f"gives itself away with {found.group(0)!r}"
    return True, "never mentions being simulated"


def ends_when_done(run: Run) -> tuple[bool, str]:
    *earlier, last = own_messages(run)
    if any(DONE in text for text in earlier):
        return False, f"wrote {DONE} before its last message"
    if DONE not in last:
        return False, f"its last message does not end the conversation with {DONE}"
    return True, f"ended with {DONE}"


machine = define_machine(
    name="persona",
    intent="Play the person a hidden scenario describes, talking to another machine, and say when done.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.6-35B-A3B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "stays_in_role": judge(),
            "keeps_secret": check("no_leaks", keeps_secret),
            "ends_when_done": check("done_marker", ends_when_done),
        },
    ),
)
