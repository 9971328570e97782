import pytest

from machine import Criterion, DefinitionError, define_rubric


def test_accepts_description_mapping_and_criterion() -> None:
    rubric = define_rubric(
        {
            "short": "  Under ten words.  ",
            "correct": {"description": "Right answer.", "weight": 3},
            "kind": Criterion("Polite.", 0.5),
        }
    )
    assert list(rubric) == ["short", "correct", "kind"]
    assert rubric["short"] == Criterion("Under ten words.", 1.0)
    assert rubric["correct"].weight == 3.0
    assert isinstance(rubric["correct"].weight, float)
    assert rubric["kind"] == Criterion("Polite.", 0.5)


def test_rejects_non_mapping() -> None:
    with pytest.raises(DefinitionError, match="mapping"):
        define_rubric([("a", "b")])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["Bad", "1st", "has-dash", "", "with space"])
def test_rejects_invalid_criterion_name(name: str) -> None:
    with pytest.raises(DefinitionError, match="is not valid"):
        define_rubric({name: "x"})


@pytest.mark.parametrize("weight", [0, -1, True, "2", float("nan")])
def test_rejects_bad_weight_naming_criterion(weight: object) -> None:
    with pytest.raises(DefinitionError, match="'short' has weight"):
        define_rubric({"short": {"description": "x", "weight": weight}})


def test_rejects_infinite_weight() -> None:
    with pytest.raises(DefinitionError, match="'short' has weight"):
        define_rubric({"short": {"description": "x", "weight": float("inf")}})


def test_rejects_empty_description() -> None:
    with pytest.raises(DefinitionError, match="'short' needs a non-empty description"):
        define_rubric({"short": "   "})


def test_rejects_unknown_key_in_mapping() -> None:
    with pytest.raises(DefinitionError, match=r"'short'.*unknown keys: \['wieght'\]"):
        define_rubric({"short": {"description": "x", "wieght": 2}})


def test_rejects_mapping_without_description() -> None:
    with pytest.raises(DefinitionError, match="'short' needs a 'description'"):
        define_rubric({"short": {"weight": 2}})


def test_rejects_other_value_types() -> None:
    with pytest.raises(DefinitionError, match="'short' must be a Criterion"):
        define_rubric({"short": 3})  # type: ignore[dict-item]


def test_fingerprint_ignores_key_order() -> None:
    a = define_rubric({"x": "one", "y": "two"})
    b = define_rubric({"y": "two", "x": "one"})
    assert a.fingerprint == b.fingerprint
    assert len(a.fingerprint) == 16


def test_fingerprint_changes_with_weight_or_description() -> None:
    base = define_rubric({"x": "one"}).fingerprint
    assert define_rubric({"x": {"description": "one", "weight": 2}}).fingerprint != base
    assert define_rubric({"x": "one!"}).fingerprint != base
    assert define_rubric({"x": "  one "}).fingerprint == base


def test_rubric_is_read_only_mapping() -> None:
    rubric = define_rubric({"x": "one"})
    assert len(rubric) == 1
    assert "x" in rubric
    with pytest.raises(TypeError):
        rubric["y"] = Criterion("two")  # type: ignore[index]


def test_merged_keeps_both_in_order() -> None:
    merged = define_rubric({"a": "A"}).merged(define_rubric({"b": "B"}))
    assert list(merged) == ["a", "b"]


def test_merged_rejects_clash_naming_criterion() -> None:
    with pytest.raises(DefinitionError, match="criterion 'a' is defined twice"):
        define_rubric({"a": "A"}).merged(define_rubric({"a": "other"}))


def test_the_gate_holds_the_required_criteria_or_every_one() -> None:
    none_marked = define_rubric({"form": "Ends with a sign-off.", "answer": "Answers the question."})
    assert none_marked.held == ["form", "answer"]
    marked = define_rubric({"form": "Ends.", "answer": {"description": "Answers.", "required": True}})
    assert marked.held == ["answer"] and marked["answer"].required and not marked["form"].required


def test_required_is_not_part_of_the_fingerprint_as_it_changes_no_grade() -> None:
    plain = define_rubric({"x": "one"}).fingerprint
    assert define_rubric({"x": {"description": "one", "required": True}}).fingerprint == plain


@pytest.mark.parametrize("required", ["yes", 1, None])
def test_rejects_a_required_that_is_not_true_or_false(required: object) -> None:
    with pytest.raises(DefinitionError, match="'x' has required"):
        define_rubric({"x": {"description": "one", "required": required}})
