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


def load_cases(path: Path) -> list[Case]:
    """Read a cases file: a JSON list of cases (or ``{"cases": [...]}``); errors name the case index."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"cases file {path} does not exist") from None
    except json.JSONDecodeError as error:
        raise BadInputError(f"cases file {path} is not valid JSON: {error}") from None
    if isinstance(raw, dict) and "cases" in raw:
        raw = raw["cases"]
    if not isinstance(raw, list):
        raise BadInputError(f"cases file {path} must hold a JSON list of cases")
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
