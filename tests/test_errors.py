"""Errors say what is wrong once; a fix is an argument of the operation or another operation, and each face
spells it (here: Python's spelling, the words any face may show, and a face that lacks the argument)."""

from __future__ import annotations

from machine.errors import FACE_SPELLING, BadInputError, Fix, MachineError, plain_spelling, python_spelling


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


def test_text_made_for_a_face_that_set_its_spelling_spells_fixes_its_way() -> None:
    """The break: a suite stopped by the budget said "give budget USD" on the command line, where
    `--budget USD` could be pasted. A face that sets its spelling gets it; a fix it lacks stays plain."""
    from machine.cli._options import cli_spelling

    spent = MachineError("the budget is spent", fixes=[Fix("budget", "USD", "larger than that")])
    token = FACE_SPELLING.set(lambda fix: cli_spelling(fix) if fix.argument == "budget" else None)
    try:
        assert spent.explain(plain_spelling) == "the budget is spent; pass --budget USD larger than that"
        assert plain_spelling(Fix("judge_model", "MODEL")) == "give judge model MODEL"
    finally:
        FACE_SPELLING.reset(token)
    assert spent.explain(plain_spelling) == "the budget is spent; give budget USD larger than that"


def test_an_operation_with_arguments_is_spelt_by_every_face() -> None:
    from machine.cli._options import cli_spelling
    from machine.server._service import tool_error

    suite = Fix(operation="suite", machine="red", arguments=(("trials", "4"),), purpose="to measure it")
    again = Fix(operation="propose", machine="red", arguments=(("model", "m1"), ("base_model", "b")))
    assert python_spelling(suite) == "`handle.suite(trials=4)`"
    assert python_spelling(again) == "`handle.propose(model='m1', base_model='b')`"
    assert plain_spelling(suite) == "suite red with trials 4"
    assert plain_spelling(again) == "propose red with model m1, base model b"
    assert cli_spelling(suite) == "`machine suite red --trials 4`"
    assert cli_spelling(again) == "`machine propose red --model m1 --price-as b`"  # in place of MODEL
    assert cli_spelling(Fix("script", "PATH")) == "pass --script PATH"
    error = MachineError("too few runs", fixes=[suite, again])
    assert str(tool_error(error)) == "too few runs; the rehearse tool with trials: 4 to measure it"
