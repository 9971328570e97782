import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from machine import Criterion, DefinitionError, GradeContext, Grader, Run, check, judge

SPEC = Criterion("Says hello.", 2.0)


def make_run(output: str = "hello", case: dict[str, Any] | None = None) -> Run:
    return Run(machine="m", model="echo", harness="echo", input="hi", output=output, case=case)


async def grade(grader: Grader, run: Run | None = None) -> Any:
    return await grader.grade(run or make_run(), "greets", SPEC, GradeContext())


async def test_check_true_scores_one_with_weight_and_grader_name() -> None:
    result = await grade(check("says_hello", lambda run: "hello" in run.output))
    assert (result.score, result.weight, result.grader, result.criterion) == (
        1.0,
        2.0,
        "check:says_hello",
        "greets",
    )


async def test_check_false_scores_zero() -> None:
    result = await grade(check("says_hello", lambda run: "hello" in run.output), make_run("bye"))
    assert result.score == 0.0
    assert result.scored


async def test_check_fraction_and_reason_tuple() -> None:
    result = await grade(check("half", lambda run: (0.5, "half right")))
    assert (result.score, result.reason) == (0.5, "half right")


async def test_async_check_is_awaited() -> None:
    async def fn(run: Run) -> bool:
        return True

    assert (await grade(check("async", fn))).score == 1.0


async def test_check_with_two_parameters_receives_case() -> None:
    grader = check("matches", lambda run, case: run.output == case["expected"])
    assert (await grade(grader, make_run("hello", {"expected": "hello"}))).score == 1.0
    assert (await grade(grader, make_run("hello", {"expected": "bye"}))).score == 0.0


async def test_check_wanting_case_gets_empty_dict_without_case() -> None:
    seen: list[object] = []
    await grade(check("c", lambda run, case: seen.append(case) or True))
    assert seen == [{}]


async def test_raising_check_is_unscored_not_zero() -> None:
    def boom(run: Run) -> bool:
        raise ValueError("no output")

    result = await grade(check("boom", boom))
    assert result.score is None
    assert not result.scored
    assert "'boom' raised ValueError: no output" in result.reason


def _line_of(fn: Any, text: str) -> str:
    """``file:line`` of the line of ``fn`` holding ``text``, as a reason names it (from the working
    folder)."""
    lines, first = inspect.getsourcelines(fn)
    number = first + next(i for i, line in enumerate(lines) if text in line)
    path = Path(__file__)
    return f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}:{number}"


def _expected(run: Run, case: dict[str, Any]) -> bool:
    return case["expected"] in run.output  # KeyError: the person's bug


def _parsed(run: Run) -> bool:
    return json.loads(run.output) == {"a": 1}  # raises inside json: the line named is this one


async def test_a_raising_check_names_the_exception_and_the_line_of_the_check() -> None:
    """A check that raises is the person's bug: its grade names the exception and where in their code,
    in the reason and in details (a suite counts them), and stays UNSCORED."""
    result = await grade(check("matches", _expected), make_run("hello", {"id": "x"}))
    at = _line_of(_expected, 'case["expected"]')
    assert result.score is None
    assert f"check 'matches' raised KeyError: 'expected' at {at}: a bug in the check" in result.reason
    assert result.details == {"raised": "KeyError", "at": at}
    inside = await grade(check("parses", _parsed), make_run("not json"))
    assert inside.details == {"raised": "JSONDecodeError", "at": _line_of(_parsed, "json.loads")}


async def test_a_check_that_says_why_it_cannot_grade_is_unscored_with_that_reason() -> None:
    result = await grade(check("needs_case", lambda run: (None, "no expected answer")))
    assert (result.score, result.reason) == (None, "no expected answer")


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), 2, "yes", None])
async def test_out_of_range_or_wrong_type_is_unscored(value: object) -> None:
    result = await grade(check("odd", lambda run: value))
    assert result.score is None
    assert "must return a bool or a number in [0, 1]" in result.reason


async def test_judge_without_model_client_is_unscored_with_reason() -> None:
    result = await grade(judge(model="x"))
    assert result.score is None
    assert result.grader == "judge:x"
    assert "no model access" in result.reason


def test_check_rejects_three_required_parameters() -> None:
    with pytest.raises(DefinitionError, match=r"'c'.*not 3 arguments"):
        check("c", lambda a, b, c: True)


def test_check_counts_only_required_parameters() -> None:
    assert check("c", lambda run, extra=None: True).wants_case is False


def test_check_rejects_empty_name_and_non_callable() -> None:
    with pytest.raises(DefinitionError, match="non-empty name"):
        check("", lambda run: True)
    with pytest.raises(DefinitionError, match="'c': fn must be callable, got int"):
        check("c", 3)  # type: ignore[arg-type]


def test_graders_satisfy_protocol() -> None:
    assert isinstance(check("c", lambda run: True), Grader)
    assert isinstance(judge(), Grader)
