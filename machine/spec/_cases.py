"""Cases: the inputs a suite runs, each with whatever its graders need (an expected answer, files)."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from machine.errors import BadInputError, NotFoundError
from machine.runs import Model


class Case(Model):
    """One case. Fields other than ``id``, ``input`` and ``files`` are kept for the graders."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    input: str
    files: dict[str, str] = Field(default_factory=dict)

    @field_validator("files")
    @classmethod
    def _inside_sandbox(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            path = PurePosixPath(name)
            if not name or path.is_absolute() or ".." in path.parts:
                raise ValueError(f"file {name!r} must be a relative path inside the sandbox")
        return files

    def data(self) -> dict[str, Any]:
        """Every field of the case, the graders' extra ones included."""
        return self.model_dump()


MAX_DEPTH = 64
"""How deeply a cases file may nest lists and objects. Deeper data is refused when the file is read: a
run records its case, and data nested too deep for the parser, the validator or the serializer would
fail later, far from the file at fault."""


def load_cases(path: Path) -> list[Case]:
    """Read a cases file: a JSON list of cases (or ``{"cases": [...]}``); errors name the case index."""
    raw = _read_json(path)
    if isinstance(raw, dict) and "cases" in raw:
        raw = raw["cases"]
    if not isinstance(raw, list):
        raise BadInputError(f"cases file {path} must hold a JSON list of cases")
    return _cases(path, raw)


def _read_json(path: Path) -> Any:
    """The file's JSON, refused in words when it is not UTF-8, not JSON, or nested too deep."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"cases file {path} does not exist") from None
    except IsADirectoryError:
        raise BadInputError(f"cases file {path} is a folder: name a .json file") from None
    except UnicodeDecodeError as error:
        raise BadInputError(
            f"cases file {path} is not UTF-8 text (byte {error.start} cannot be read): save it as UTF-8"
        ) from None
    except OSError as error:
        raise BadInputError(f"cases file {path} cannot be read: {error.strerror or error}") from None
    too_deep = BadInputError(
        f"cases file {path} nests lists or objects more than {MAX_DEPTH} levels deep: flatten the data"
    )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadInputError(f"cases file {path} is not valid JSON: {error}") from None
    except RecursionError:
        raise too_deep from None
    if depth(raw) > MAX_DEPTH:
        raise too_deep
    return raw


def depth(value: Any) -> int:
    """How many lists and objects deep ``value`` nests (0 for a number or a string), found without
    recursion, so no data is too deep to measure."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _cases(path: Path, raw: list[Any]) -> list[Case]:
    cases: list[Case] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        if isinstance(item, dict) and isinstance(item.get("id"), int):
            item = {**item, "id": str(item["id"])}
        try:
            case = Case.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "case"
            raise BadInputError(
                f"cases file {path}: case {index} is malformed ({field}: {first['msg']})"
            ) from None
        if case.id in seen:
            raise BadInputError(f"cases file {path}: case {index} repeats the id {case.id!r}")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise BadInputError(f"cases file {path} holds no cases")
    return cases
