import json
from pathlib import Path
from typing import Any

import pytest

from machine import BadInputError, NotFoundError
from machine.spec import load_cases


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_loads_list_of_cases(tmp_path: Path) -> None:
    cases = load_cases(
        write(tmp_path, [{"id": "a", "input": "hi"}, {"id": "b", "input": "yo", "files": {"x": "1"}}])
    )
    assert [c.id for c in cases] == ["a", "b"]
    assert cases[1].files == {"x": "1"}
    assert cases[0].files == {}


def test_loads_cases_key(tmp_path: Path) -> None:
    assert load_cases(write(tmp_path, {"cases": [{"id": "a", "input": "hi"}]}))[0].id == "a"


def test_extra_fields_are_kept_for_graders(tmp_path: Path) -> None:
    case = load_cases(write(tmp_path, [{"id": "a", "input": "hi", "expected": "hello", "tags": ["x"]}]))[0]
    assert case.data() == {"id": "a", "input": "hi", "files": {}, "expected": "hello", "tags": ["x"]}


def test_int_ids_become_strings(tmp_path: Path) -> None:
    cases = load_cases(write(tmp_path, [{"id": 1, "input": "a"}, {"id": 2, "input": "b"}]))
    assert [c.id for c in cases] == ["1", "2"]


def test_duplicate_id_names_file_and_index(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}, {"id": "a", "input": "z"}])
    with pytest.raises(BadInputError, match="case 2 repeats the id 'a'") as info:
        load_cases(path)
    assert str(path) in str(info.value)


def test_int_and_string_ids_clash(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="case 1 repeats the id '1'"):
        load_cases(write(tmp_path, [{"id": 1, "input": "x"}, {"id": "1", "input": "y"}]))


@pytest.mark.parametrize(
    ("case", "field"),
    [
        ({"id": "a"}, "input"),
        ({"input": "x"}, "id"),
        ({"id": "", "input": "x"}, "id"),
        ({"id": "a", "input": "x", "files": {"f": 3}}, "files.f"),
    ],
)
def test_malformed_case_names_file_index_and_field(tmp_path: Path, case: dict[str, Any], field: str) -> None:
    path = write(tmp_path, [{"id": "ok", "input": "fine"}, case])
    with pytest.raises(BadInputError, match=f"case 1 is malformed \\({field}:") as info:
        load_cases(path)
    assert str(path) in str(info.value)


def test_non_object_case_is_malformed(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="case 0 is malformed"):
        load_cases(write(tmp_path, ["just a string"]))


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        load_cases(tmp_path / "nope.json")


def test_invalid_json_names_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(BadInputError, match="is not valid JSON") as info:
        load_cases(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("data", [{"id": "a", "input": "x"}, "text", 3])
def test_non_list_is_rejected(tmp_path: Path, data: Any) -> None:
    with pytest.raises(BadInputError, match="must hold a JSON list of cases"):
        load_cases(write(tmp_path, data))


def test_empty_list_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="holds no cases"):
        load_cases(write(tmp_path, []))
