"""signoff: answers a question in a sentence and signs off with "Aye!".

The rule is fixed and cheap to check, and a small model does not follow it from the instructions alone:
SmolLM2-135M, asked to, ends almost no reply with "Aye!". That makes it the machine the offline learning
loop teaches: a teacher's graded runs are distilled into the local model, and the held-out cases say
whether it learned (`demo/teach_local.sh`). The answer itself is checked too, against the words each case
expects, so a model that learns the sign-off and forgets how to answer is caught by the gate.
"""

from __future__ import annotations

import re

from machine import Run, check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

SIGN_OFF = "Aye!"


def signs_off(run: Run) -> tuple[bool, str]:
    """The reply, stripped, ends with the sign-off, after an answer."""
    text = run.output.strip()
    if not text:
        return False, "the reply is empty"
    if not text.endswith(SIGN_OFF):
        return False, f"the reply ends with {text[-20:]!r}, not with {SIGN_OFF!r}"
    if not text[: -len(SIGN_OFF)].strip():
        return False, f"the reply is only {SIGN_OFF!r}, with no answer before it"
    return True, f"answers, then signs off with {SIGN_OFF!r}"


def _said(text: str, words: list[str]) -> list[str]:
    """The words (or word beginnings: "melt" for "melts") the text says."""
    return [w for w in words if re.search(rf"\b{re.escape(w.lower())}", text)]


def answers(run: Run) -> tuple[bool | None, str]:
    """The answer before the sign-off is right: it says one of the case's ``answer`` words and none of
    its ``wrong`` ones. A run with no case to check against cannot be graded (UNSCORED)."""
    expected = (run.case or {}).get("answer")
    if not expected:
        return None, "the run's case names no answer to check against"
    text = run.output.lower().removesuffix(SIGN_OFF.lower())
    wrong = _said(text, list((run.case or {}).get("wrong", [])))
    if wrong:
        return False, f"the answer says {wrong[0]!r}, which is wrong here"
    right = _said(text, list(expected))
    if not right:
        return False, f"the answer says none of {', '.join(map(repr, expected))}"
    return True, f"the answer says {right[0]!r}"


machine = define_machine(
    name="signoff",
    intent='Answer a question in one short sentence, then sign off with "Aye!".',
    instructions=instructions_from(__file__),
    model=model_from(__file__, "local:smollm2-135m"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"signs_off": check("sign_off", signs_off), "answers": check("answer", answers)}
    ),
    max_steps=1,
)
