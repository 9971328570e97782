"""The memorization guard: the word-run rule of ``overlaps``, and a proposal that copies a case refused by
optimize unless copying is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.optimize import LONG, Keyed, block, make_shout, snapshot

from machine import Case, open_workspace
from machine.learn import optimize
from machine.learn.optimize import Overlap, overlaps
from machine.learn.optimize._overlap import N_GRAM, SHORTEST
from machine.versions import versions

ELEVEN = "the quick brown fox jumps over the lazy dog near the river"


def case(**fields: object) -> Case:
    return Case(id="c", input=str(fields.pop("input", "x")), **fields)


def test_the_rule_is_eight_words_in_a_row() -> None:
    assert (N_GRAM, SHORTEST) == (8, 5)
    cases = [case(input=ELEVEN)]
    eight = "Remember: quick brown fox jumps over the lazy dog, always."
    assert overlaps(eight, cases) == [Overlap("c", "input", "quick brown fox jumps over the lazy dog")]
    seven = "Remember: quick brown fox jumps over the lazy. Then a dog."
    assert overlaps(seven, cases) == []
    scattered = "the river, the dog, the fox: quick brown ones jump over lazy ones near it"
    assert overlaps(scattered, cases) == []


def test_words_are_compared_without_case_or_punctuation() -> None:
    shouted = "QUICK, BROWN FOX -- JUMPS OVER (THE) LAZY DOG!"
    assert overlaps(shouted, [case(input=ELEVEN)])[0].words == "quick brown fox jumps over the lazy dog"


def test_a_shorter_value_counts_only_whole_and_only_from_five_words() -> None:
    five = "answer with the total only"
    four = "answer with the total"
    cases = [case(input="q", expected=five), Case(id="d", input="q", expected=four)]
    text = f"Always {five}. Also {four}."
    assert overlaps(text, cases) == [Overlap("c", "expected", five)]
    assert (
        overlaps(
            "Always answer with the total, only.",
            [case(input="q", expected="answer with the total only now")],
        )
        == []
    )


def test_text_the_instructions_already_hold_is_not_copying() -> None:
    cases = [case(input=ELEVEN)]
    proposal = "Old rule kept: quick brown fox jumps over the lazy dog."
    assert (
        overlaps(proposal, cases, known=["If asked, say the quick brown fox jumps over the lazy dog."]) == []
    )
    assert overlaps(proposal, cases, known=["Say the quick brown fox jumps over it."]) != []


CAPITALS = [
    Case(id="fr", input="capital france", expected="Paris"),
    Case(id="es", input="capital spain", expected="Madrid"),
    Case(id="jp", input="Capital, Japan!", expected="tokyo"),
]
"""Cases of 2-word keys and 1-word answers: too short for the word-run rule."""


def test_a_table_of_short_keys_and_answers_is_caught() -> None:
    """The break: a table of 2-word keys and 1-word answers slipped past the copying guard."""
    table = (
        "Answer from this table.\n| CAPITAL FRANCE | paris |\n| capital spain | MADRID |\n"
        "capital japan -> Tokyo."
    )
    found = overlaps(table, CAPITALS)
    assert [(o.case_id, o.field, o.words) for o in found] == [
        ("fr", "input and expected", "capital france → paris"),
        ("es", "input and expected", "capital spain → madrid"),
        ("jp", "input and expected", "capital japan → tokyo"),
    ]


def test_a_short_answer_or_key_alone_is_not_a_table() -> None:
    """Answers such as "yes", "4" or "Paris" may be said, and a key named, without being refused: only a
    key beside its own answer is a row of a table."""
    assert overlaps("Name the capital city in one word, such as Paris or Madrid.", CAPITALS) == []
    assert overlaps("A question may read 'capital france': answer with a city.", CAPITALS) == []
    # a key with another case's answer is no row either
    assert overlaps("capital france is not Madrid.", CAPITALS) == []
    short = [Case(id="y", input="is the sky blue", expected="yes"), Case(id="n", input="2 + 2", expected="4")]
    assert overlaps("Answer yes or no, or with a number such as 4.", short) == []
    assert [o.case_id for o in overlaps("Is the sky blue? yes. 2+2? 4.", short)] == ["y", "n"]


def test_a_key_and_answer_the_instructions_already_held_is_not_copying() -> None:
    known = ["For example, capital france: Paris."]
    assert overlaps("Keep it short. For example, capital france: Paris.", CAPITALS, known=known) == []
    assert [
        o.case_id for o in overlaps("capital france: Paris; capital spain: Madrid", CAPITALS, known=known)
    ] == ["es"]


def test_every_field_is_looked_into_and_named_but_not_the_id_or_files() -> None:
    sentence = "the reply names the capital city of every country asked"
    cases = [
        Case(
            id=sentence,
            input="q",
            files={"notes.txt": sentence},
            answers=["x", sentence],
            meta={"hint": sentence},
        )
    ]
    found = overlaps(f"Rule: {sentence}.", cases)
    assert [(o.field, o.words) for o in found] == [
        ("answers[1]", "the reply names the capital city of every"),
        ("meta.hint", "the reply names the capital city of every"),
    ]


def test_one_copy_per_field_and_each_case_named() -> None:
    other = "a completely different sentence with nothing at all shared"
    cases = [Case(id="one", input=ELEVEN), Case(id="two", input=other)]
    found = overlaps(f"{ELEVEN}. {ELEVEN}. {other}.", cases)
    assert [(o.case_id, o.field) for o in found] == [("one", "input"), ("two", "input")]


@pytest.mark.parametrize("allow", [False, True])
async def test_a_proposal_copying_a_case_is_refused_unless_allowed(tmp_path: Path, allow: bool) -> None:
    folder = make_shout(tmp_path)
    copying = f"Say the input back in CAPITALS. For example, {LONG}: say it all."
    harness = Keyed([block(copying)])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    before = snapshot(folder)
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1, allow_overlap=allow)
    [p] = result.report.rounds[0].proposals
    words = " ".join(LONG.split()[:8])
    assert [(c.case_id, c.field, c.words) for c in p.copied] == [
        ("long", "input", words),
        ("long", "expected", words),
    ]
    assert p.cases is not None and p.cases.outcome == "passed"  # it did win: refused for copying alone
    assert result.report.allow_overlap is allow
    if allow:
        assert p.outcome == "kept" and "(it copies a case, which was allowed)" in p.decision
        assert (folder / "instructions.md").read_text(encoding="utf-8") == copying + "\n"
    else:
        assert p.outcome == "discarded"
        assert p.decision.startswith(f"it copies case 'long' (input) word for word (\"{words}\")")
        assert p.holdout is None  # not measured further
        assert result.candidate is None and snapshot(folder) == before


async def test_a_proposal_listing_short_cases_with_their_answers_is_refused(tmp_path: Path) -> None:
    """A table of the cases (each input beside its answer) wins on the cases and even held out (it also
    says CAPITALS), yet it copies the cases: refused, where the word-run rule alone let it through."""
    folder = make_shout(tmp_path)
    pairs = [("red apple", "RED APPLE"), ("blue sky", "BLUE SKY"), ("green tea", "GREEN TEA")]
    cases = [{"id": f"k{i}", "input": key, "expected": answer} for i, (key, answer) in enumerate(pairs)]
    cases += [{"id": n, "input": n, "expected": n.upper()} for n in ("bob", "cat", "dan", "eve")]
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    table = "Say the input back in CAPITALS.\n" + "\n".join(f"{key} = {answer}" for key, answer in pairs)
    ws = open_workspace(tmp_path, harness=Keyed([block(table)]))
    versions(ws, "shout")
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    [p] = result.report.rounds[0].proposals
    assert [c.case_id for c in p.copied] == ["k0", "k1", "k2"]
    assert p.cases is not None and p.cases.outcome == "passed"
    assert p.outcome == "discarded"
    assert p.decision.startswith(
        "it copies case 'k0' (input and expected) word for word (\"red apple → red apple\")"
    )
    assert result.candidate is None
