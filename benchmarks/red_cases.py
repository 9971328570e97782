"""Training cases for ``red`` made to fit its rule: pairs of sentences that differ only where the word is,
one saying "red" as a word of its own (in a case or with punctuation the rule allows) and one saying a near
miss ("bored", "Fred", "credit", "shredded", "red2", ...) or no red at all, so the teacher's runs show the
line the rule draws from both sides, in equal numbers.

Each case's label comes from how its sentence was made, never from the rule's regex, so checking the
label against the scripted teacher's pattern (machines/red/script.json) checks the teacher, and grading the
teacher's run of every case with red's own rubric (every one must score 1) checks the grader. The held-out
cases (machines/red/holdout.json) are never made here: no generated input is one of theirs, and the forms
they probe (a quoted "red", "#red", "Red Sox", "hundred", "altered", "reddish", a repeated "red") are left
out, so the held-out mean measures the rule learned, not the sentences seen. ``NAMES`` ("Red" inside other
proper names, the form nearest "Red Sox") are a control, drawn only when asked for.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path
from typing import Any

NOUNS = ["car", "door", "scarf", "kite", "mug", "bike", "coat", "lamp", "boat", "pen", "tent", "chair"]

PAIRS = [
    ("My {n} is red.", "My {n} is ready."),
    ("I saw a red {n} today.", "I saw a shredded {n} today."),
    ("Is the {n} RED?", "Is the {n} REDONE?"),
    ("Put the {n} in the (red) box.", "Put the {n} in the bread box."),
    ("Fred likes the red {n}.", "Fred likes the blue {n}."),
    ("The {n} turned RED!", "The {n} looked tired!"),
    ("I read about the red {n} yesterday.", "I read about the old {n} yesterday."),
    ("The red {n} works at night.", "The infrared {n} works at night."),
    ("Please paint the {n} red.", "Please redo the {n}."),
    ("He was bored by the red {n}.", "He was bored by the {n}."),
    ("Red {n}s sell out fast.", "Credit {n}s sell out fast."),
    ("Model red {n} ships soon.", "Model red2 {n} ships soon."),
    ("The {n}: red, small, cheap.", "The {n}: reduced, small, cheap."),
    ("A red-striped {n} is on sale.", "A redesigned {n} is on sale."),
    ("Which {n}? The Red one.", "Which {n}? The Fred one."),
    ("That {n} is bright red, not pink.", "That {n} is sacred, not cheap."),
    ("Mildred wants a red {n}.", "Mildred wants a {n}."),
    ("Grab the {n}, the RED one!", "Grab the {n}, the REDWOOD one!"),
    ("Our {n} came in red", "Our {n} came in predicted"),
    ("red {n}", "kindred {n}"),
    ("Red is the colour of my {n}.", "Reduce the size of my {n}."),
    ("The {n} was red; the rest was grey.", "The {n} was tired; the rest was grey."),
    ("Say it plainly: red {n}.", "Say it plainly: bred {n}."),
    ("[red] {n} for sale", "[redeemed] {n} for sale"),
    ("Her {n} is red/blue.", "Her {n} is credo/blue."),
    ("Why is the {n} so RED?", "Why is the {n} so HATRED?"),
    ("We ordered a red {n}.", "We ordered a {n}."),
    ("Look at that red {n} over there", "Look at that covered {n} over there"),
    ("The {n} looks red to me.", "The {n} looks scared to me."),
    ("Alfred painted the {n} red.", "Alfred painted the {n} green."),
    ("Is red a good colour for a {n}?", "Is Redmond a good place for a {n}?"),
    ("I want the {n} in red, please.", "I want the {n} shredded, please."),
    ("The {n} is Red.", "The {n} is Fredrik's."),
    ("A {n} so red it glows.", "A {n} so sacred it glows."),
    ("Red {n}, blue {n}.", "Reddit {n}, blue {n}."),
    ("Can you find a red {n}?", "Can you find a predator {n}?"),
    ("My favourite {n} is the red one", "My favourite {n} is the tired one"),
    ("Does the {n} come in RED or black?", "Does the {n} come in REDUX or black?"),
    ("The sign on the {n} said red.", "The sign on the {n} said bored."),
    ("Turn the {n} light to red now.", "Turn the {n} light to redo now."),
    ("Is red the right colour for the {n}?", "Is redness the right word for the {n}?"),
    ("The {n} went red in the sun.", "The {n} reddened in the sun."),
    ("A red {n} stood by the door.", "A redhead stood by the {n}."),
    ("They made the {n} red.", "They made the {n} redesign."),
    ("Paint the {n} red, then dry it.", "Redirect the {n}, then dry it."),
    ("Is the {n} red or not?", "Is the {n} redacted or not?"),
    ("I drew the {n} in red.", "I will redraw the {n}."),
    ("RED {n} here", "REDIAL {n} here"),
]
"""(mentions red, does not): the same sentence but for the word. A positive may hold a near miss too."""

NAMES = [
    ("The Red Cross sent a {n}.", "The Fredericks sent a {n}."),
    ("We visited Red Square with a {n}.", "We visited Redmond with a {n}."),
    ("The Red Sea is calm for a {n}.", "The Dead Sea is calm for a {n}."),
    ("A Red Cross {n} arrived.", "A Redcliffe {n} arrived."),
    ("Red Bull gave away a {n}.", "Redbull gave away a {n}."),
]
"""Pairs with "Red" inside a proper name: the form next to the held-out "Red Sox" (no team among them),
drawn only when asked for (``names``), to tell what the model cannot learn from what it is not shown."""

HELD_OUT_FORMS = re.compile(r'"red"|#red|sox|hundred|altered|reddish|red, red', re.IGNORECASE)


def generated(pairs: int, seed: int = 0, names: bool = False) -> list[dict[str, Any]]:
    """``pairs`` positive and negative cases (``red`` says which), drawn without repeats; ``names``: from
    the pairs with "Red" in a proper name too."""
    templates = PAIRS + NAMES if names else PAIRS
    combos = list(itertools.product(range(len(templates)), NOUNS))
    random.Random(seed).shuffle(combos)
    if pairs > len(combos):
        raise SystemExit(f"at most {len(combos)} pairs can be made, not {pairs}")
    cases: list[dict[str, Any]] = []
    for number, (index, noun) in enumerate(combos[:pairs]):
        yes, no = templates[index]
        cases.append({"id": f"gen-{number}-red", "input": yes.format(n=noun), "red": True})
        cases.append({"id": f"gen-{number}-not", "input": no.format(n=noun), "red": False})
    return cases


def checked(cases: list[dict[str, Any]], script: Path, held_out: Path) -> None:
    """Every label agrees with the teacher's pattern, and no case is (or probes) a held-out one."""
    rule = json.loads(script.read_text(encoding="utf-8"))["rules"][0]["match"]
    teacher = re.compile(rule)
    held = {c["input"] for c in json.loads(held_out.read_text(encoding="utf-8"))}
    for case in cases:
        text = case["input"]
        if (teacher.search(text) is not None) != case["red"]:
            raise SystemExit(f"case {case['id']} {text!r}: the teacher's pattern and its label disagree")
        if text in held or HELD_OUT_FORMS.search(text):
            raise SystemExit(f"case {case['id']} {text!r} is (or probes the form of) a held-out case")
