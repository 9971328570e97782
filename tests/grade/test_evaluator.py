import pytest

from machine import (
    DefinitionError,
    Evaluator,
    GradeContext,
    Run,
    check,
    define_evaluator,
    define_rubric,
    judge,
)


def make_run(output: str = "hello") -> Run:
    return Run(machine="m", model="echo", harness="echo", input="hi", output=output)


RUBRIC = define_rubric({"greets": {"description": "Says hello.", "weight": 3}, "short": "Brief."})


def make_evaluator() -> Evaluator:
    return define_evaluator(
        RUBRIC,
        {"short": check("short", lambda run: len(run.output) < 4), "greets": check("hi", lambda run: True)},
    )


def test_graders_follow_rubric_order() -> None:
    assert list(make_evaluator().graders) == ["greets", "short"]


def test_missing_grader_names_criterion() -> None:
    with pytest.raises(DefinitionError, match="criterion 'short' has no grader"):
        define_evaluator(RUBRIC, {"greets": judge()})


def test_all_missing_graders_are_listed() -> None:
    with pytest.raises(DefinitionError, match=r"'greets' has no grader.*also missing: short"):
        define_evaluator(RUBRIC, {})


def test_extra_grader_names_it_and_the_criteria() -> None:
    with pytest.raises(DefinitionError, match=r"grader for 'polite' matches no criterion.*greets, short"):
        define_evaluator(RUBRIC, {"greets": judge(), "short": judge(), "polite": judge()})


def test_non_grader_is_rejected_naming_criterion() -> None:
    with pytest.raises(DefinitionError, match="grader for 'short' is function, not a grader"):
        define_evaluator(RUBRIC, {"greets": judge(), "short": lambda run: True})  # type: ignore[dict-item]


def test_first_argument_must_be_rubric() -> None:
    with pytest.raises(DefinitionError, match="takes a Rubric"):
        define_evaluator({"greets": "x"}, {"greets": judge()})  # type: ignore[arg-type]


async def test_grade_scores_each_criterion_with_weighted_total() -> None:
    card = await make_evaluator().grade(make_run("hello"))
    assert list(card.criteria) == ["greets", "short"]
    assert card.criteria["greets"].score == 1.0
    assert card.criteria["short"].score == 0.0
    assert card.score == pytest.approx(3 / 4)
    assert card.rubric_fingerprint == RUBRIC.fingerprint
    assert card.passed is False


async def test_grade_uses_pass_score() -> None:
    card = await make_evaluator().grade(make_run("hello"), GradeContext(), pass_score=0.7)
    assert card.pass_score == 0.7
    assert card.passed is True


async def test_unscored_criterion_is_kept_out_of_score() -> None:
    evaluator = define_evaluator(RUBRIC, {"greets": judge(), "short": check("short", lambda run: True)})
    card = await evaluator.grade(make_run())
    assert card.unscored == ["greets"]
    assert card.score == 1.0


def test_merged_records_origin_of_added_criteria() -> None:
    other = define_evaluator(define_rubric({"polite": "Kind."}), {"polite": judge()})
    merged = make_evaluator().merged(other, origin="red/strict")
    assert list(merged.rubric) == ["greets", "short", "polite"]
    assert set(merged.graders) == {"greets", "short", "polite"}
    assert merged.origins["polite"] == "red/strict"


def test_merged_rejects_clashing_criterion() -> None:
    other = define_evaluator(define_rubric({"short": "Other."}), {"short": judge()})
    with pytest.raises(DefinitionError, match="'short' is defined twice"):
        make_evaluator().merged(other, origin="x")


class BrokenGrader:
    kind = "custom"
    name = "broken"

    async def grade(self, run: object, criterion: str, spec: object, ctx: object) -> object:
        raise RuntimeError("grader bug")


async def test_a_grader_that_raises_leaves_its_criterion_unscored() -> None:
    evaluator = define_evaluator(
        RUBRIC, {"greets": BrokenGrader(), "short": check("short", lambda run: True)}
    )
    card = await evaluator.grade(make_run())
    assert card.unscored == ["greets"]
    assert "custom:broken raised RuntimeError: grader bug" in card.criteria["greets"].reason
    assert card.score == 1.0
