"""Errors say what is wrong once; a fix is an argument of the operation or another operation, and each face
spells it (here: Python's spelling, the words any face may show, and a face that lacks the argument)."""

from __future__ import annotations

from machine.errors import BadInputError, Fix, MachineError, plain_spelling, python_spelling


def test_a_fix_is_spelt_as_a_python_keyword_with_a_python_value() -> None:
    assert python_spelling(Fix("force")) == "pass force=True"
    assert python_spelling(Fix("budget", "2.5")) == "pass budget=2.5"
    assert python_spelling(Fix("budget", "none")) == "pass budget=None"
    assert python_spelling(Fix("price_as", "BASE_MODEL")) == "pass price_as=BASE_MODEL"
    assert python_spelling(Fix("harness", "echo")) == "pass harness='echo'"
    assert python_spelling(Fix(operation="suite", machine="red")) == "`handle.suite()`"


def test_str_is_the_message_with_the_python_fixes() -> None:
    error = BadInputError("the budget is spent", fixes=[Fix("budget", "USD", "larger than that")])
    assert error.message == "the budget is spent"
    assert str(error) == "the budget is spent; pass budget=USD larger than that"
    assert isinstance(error, MachineError) and error.fixes == (Fix("budget", "USD", "larger than that"),)


def test_a_face_without_the_argument_leaves_that_fix_out() -> None:
    error = MachineError(
        "no price", fixes=[Fix("price_as", "MODEL"), Fix("budget", "none", "to lift the cap")]
    )
    only_budget = error.explain(lambda fix: "give budget_usd" if fix.argument == "budget" else None)
    assert only_budget == "no price; give budget_usd to lift the cap"
    assert error.explain(lambda fix: None) == "no price"


def test_plain_words_for_text_any_face_shows() -> None:
    assert plain_spelling(Fix("judge_model", "MODEL")) == "give judge model MODEL"
    assert MachineError("plain").explain(plain_spelling) == "plain"
