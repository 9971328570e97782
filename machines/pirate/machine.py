"""pirate: answers anything as a golden-age pirate.

Voice, anachronisms and metaphor take judgement, so a model judge grades them; the emoji count is a
matter of counting, so code does it.
"""

from __future__ import annotations

import re

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from

from .rubric import rubric

MIN_EMOJI, MAX_EMOJI = 1, 4

# The pirate emoji, written without variation selectors (U+FE0F / U+FE0E), which are removed from the
# reply before counting so "☠" and "☠️" are one emoji. The pirate flag is the ZWJ sequence
# black flag + ZWJ + skull and crossbones; it is one emoji and its skull is not counted again.
PIRATE_FLAG = "\U0001f3f4\u200d\u2620"
PIRATE_EMOJI = (
    PIRATE_FLAG,  # 🏴‍☠️ pirate flag
    "\u2620",  # ☠️ skull and crossbones
    "\U0001f99c",  # 🦜 parrot
    "\u2693",  # ⚓ anchor
    "\U0001f5e1",  # 🗡️ dagger
    "\u2694",  # ⚔️ crossed swords
    "\U0001f6a2",  # 🚢 ship
    "\u26f5",  # ⛵ sailboat
    "\U0001f30a",  # 🌊 wave
    "\U0001f4b0",  # 💰 money bag
    "\U0001fa99",  # 🪙 coin
    "\U0001f37a",  # 🍺 beer mug (grog)
    "\U0001f5fa",  # 🗺️ map
    "\U0001f3dd",  # 🏝️ desert island
    "\U0001f988",  # 🦈 shark
    "\U0001f419",  # 🐙 octopus
)
_VARIATION_SELECTORS = re.compile("[\ufe0e\ufe0f]")
# Longest first, so the flag sequence is taken whole before its skull could match alone.
_PIRATE = re.compile("|".join(re.escape(e) for e in sorted(PIRATE_EMOJI, key=len, reverse=True)))


def pirate_emoji(text: str) -> list[str]:
    """The pirate emoji in ``text``, in order, each sequence counted once."""
    return _PIRATE.findall(_VARIATION_SELECTORS.sub("", text))


def emoji(run: Run) -> tuple[bool, str]:
    found = pirate_emoji(run.output)
    shown = " ".join(found)
    if len(found) < MIN_EMOJI:
        return False, "no pirate emoji; use one to four"
    if len(found) > MAX_EMOJI:
        return False, f"{len(found)} pirate emoji ({shown}); use at most {MAX_EMOJI}"
    return True, f"{len(found)} pirate emoji ({shown})"


machine = define_machine(
    name="pirate",
    intent="Answer any question as a golden-age pirate would, without losing the actual answer.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "answers_question": judge(),
            "pirate_voice": judge(),
            "nothing_modern": judge(),
            "seafaring_metaphor": judge(),
            "emoji": check("pirate_emoji", emoji),
        },
    ),
)
