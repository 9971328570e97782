"""signoff: answers a question in a sentence and signs off with "Aye!".

The rule is fixed and cheap to check, and a small model does not follow it from the instructions alone:
SmolLM2-135M, asked to, ends almost no reply with "Aye!". That makes it the machine the offline learning
loop teaches: a teacher's graded runs are distilled into the local model, and the held-out cases say
whether it learned (`demo/teach_local.sh`).
"""

from __future__ import annotations

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


machine = define_machine(
    name="signoff",
    intent='Answer a question in one short sentence, then sign off with "Aye!".',
    instructions=instructions_from(__file__),
    model=model_from(__file__, "local:smollm2-135m"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"signs_off": check("sign_off", signs_off)}),
    max_steps=1,
)
