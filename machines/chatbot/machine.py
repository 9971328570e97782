"""chatbot: plain, honest answers in a running conversation.

Answering and honesty take judgement, so a model judge grades them; length and filler openings are
decided by code, which is cheaper and never wavers.

Its counterpart is ``persona``, a simulated user: each case in cases.json is a hidden scenario that persona
plays, so a case is a whole conversation, and chatbot's last answer (with the conversation as its history)
is the run that is graded. ``machine converse chatbot [CASE]`` prints one.
"""

from __future__ import annotations

import re

from machine import (
    Counterpart,
    Run,
    check,
    define_evaluator,
    define_machine,
    instructions_from,
    judge,
    model_from,
)

from ..persona.machine import DONE
from ..persona.machine import machine as persona
from .rubric import rubric

MAX_WORDS = 150

# Openings that say nothing. Each is filler wherever the reply starts with it.
FILLER_PHRASES = (
    "great question",
    "good question",
    "excellent question",
    "what a great question",
    "that's a great question",
    "that is a great question",
    "as an ai",
    "as a language model",
    "as an assistant",
    "i'd be happy to",
    "i would be happy to",
    "i'd be glad to",
    "i'm happy to help",
    "happy to help",
    "thanks for asking",
    "thank you for asking",
    "thank you for your question",
)
# Interjections that are filler only as an exclamation or a lead-in ("Certainly!", "Absolutely, ..."):
# "Certainly not." or a bare "Of course." can be the answer itself, so those are let through.
FILLER_INTERJECTIONS = ("certainly", "absolutely", "of course", "sure thing", "sure")

_LEAD = re.compile(r"""^[\s"'*_#>`~\u2018\u201c-]+""")  # markdown and quotes a reply may open with


def word_count(text: str) -> int:
    return len(text.split())


def concise(run: Run) -> tuple[float, str]:
    """A reply scores 1 if it has between 1 and MAX_WORDS words; an empty reply scores 0."""
    words = word_count(run.output)
    if words == 0:
        return 0.0, "the reply is empty"
    if words > MAX_WORDS:
        return 0.0, f"{words} words; at most {MAX_WORDS}"
    return 1.0, f"{words} words"


def filler_opening(text: str) -> str | None:
    """The filler phrase ``text`` opens with, or None."""
    start = _LEAD.sub("", text).replace("\u2019", "'").lower()
    for phrase in FILLER_PHRASES:
        if start.startswith(phrase) and not start[len(phrase) : len(phrase) + 1].isalnum():
            return phrase
    for word in FILLER_INTERJECTIONS:
        if start.startswith(word) and start[len(word) : len(word) + 1] in ("!", ","):
            return word
    return None


def no_filler(run: Run) -> tuple[bool, str]:
    found = filler_opening(run.output)
    if found is None:
        return True, "opens with substance"
    return False, f"opens with the filler {found!r}"


def user_is_done(run: Run) -> bool:
    """The conversation ends on the simulated user's turn that says it is done (chatbot saying the
    marker ends nothing)."""
    return run.machine == persona.name and DONE in run.output


machine = define_machine(
    name="chatbot",
    intent="Answer one person's questions in a running conversation, plainly and honestly.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "answers": judge(),
            "honest": judge(),
            "concise": check("words", concise),
            "no_filler": check("no_filler", no_filler),
        },
    ),
    counterpart=Counterpart(machine=persona, until=user_is_done, max_turns=8),
)
