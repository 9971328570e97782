"""What a case of a machine must hold, read from its parent's cases, and the checks a written case
passes before anything of it is run: its id, input, fields, files, command, reference fix and hidden
tests, each bounded in size. A case that fails one is refused with a sentence saying which and why."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict

from machine.errors import BadInputError
from machine.runs import TEST_NAME, sandbox_path
from machine.spec import MAX_DEPTH, Case, Machine, depth

from .._replies import MAX_CASE_CHARS

MAX_FIELD_CHARS = 100_000
"""The most characters one field of a case may take as JSON."""
MAX_FILES = 50
MAX_EDITS = 20
MAX_HIDDEN = 10
MAX_ID = 60
HIDDEN_COMMAND = "python3 -m unittest"
"""What runs one hidden test file alone (``python3 -m unittest test_edge``), here and when grading."""
STARTING_TESTS = "starting_tests"
"""A project case's note of whether its tests start passing; a vetted case's tests start failing."""
DECIDED = ("id", "input", "files", "tests", "reference", "hidden")
"""Fields checked on their own terms, never merely required."""


class CaseShape(BaseModel):
    """What each case of a machine must carry: an input, the fields every parent case has (what its
    checks compare with), and for a project machine starting files, the parent's checking command and a
    reference fix (and hidden tests when it is graded with them)."""

    model_config = ConfigDict(frozen=True)

    machine: str
    required: list[str] = []
    """Fields every case must have besides ``id`` and ``input`` (``expected``, ``kind``)."""
    types: dict[str, list[str]] = {}
    """The JSON types the parent's cases give each required field; a case must use one of them."""
    project: bool = False
    """Cases are projects: ``files``, a ``tests`` command, and a ``reference`` fix that makes it pass."""
    commands: list[str] = []
    """The checking commands the parent's cases use; a project case must use one of them."""
    hidden: bool = False
    """Each case must carry hidden tests (the machine is graded with the hidden-tests grader)."""
    hidden_command: str = HIDDEN_COMMAND
    answers: bool = False
    """A project case may come without a fix (a question, a plan, a report, as some of the parent's do):
    it says whether its tests start passing, and the sandbox checks that it is so."""


def case_shape(parent: Machine, parent_cases: Sequence[Case], hidden: bool) -> CaseShape:
    """The shape of a child's cases, from its parent and the parent's cases; ``hidden`` when the child
    is graded with hidden tests, which only project cases can carry."""
    datas = [case.data() for case in parent_cases]
    common = set.intersection(*(set(d) for d in datas)) if datas else set()
    project = bool(datas) and all(d.get("files") and isinstance(d.get("tests"), str) for d in datas)
    if hidden and not project:
        raise BadInputError(
            f"hidden tests need project cases (starting files and a checking command), and the cases of "
            f"{parent.name!r} are not projects: grade its child without hidden tests"
        )
    required = sorted(common - set(DECIDED))
    types = {name: sorted({_json_type(d[name]) for d in datas}) for name in required}
    commands = sorted({d["tests"] for d in datas}) if project else []
    answers = project and not hidden and any(not d.get("reference") for d in datas)
    return CaseShape(
        machine=parent.name,
        required=required,
        types=types,
        project=project,
        commands=commands,
        hidden=hidden,
        answers=answers,
    )


@dataclass
class Draft:
    """A written case that passed the checks that need no sandbox, ready for those that do."""

    case: dict[str, Any]
    """The case as it would be kept (hidden tests taken out)."""
    starting: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, str] = field(default_factory=dict)
    """The starting files with the reference fix applied."""
    hidden: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    starts: str | None = None
    """For a case without a fix: how its tests start, ``pass`` or ``fail``, as it says."""

    @property
    def id(self) -> str:
        return str(self.case["id"])


class Refused(Exception):
    """A case refused before any sandbox: the sentence says why."""


def case_id(raw: Mapping[str, Any], taken: set[str]) -> str:
    """The case's id, made unique among ``taken`` (and added to it): its own ``id`` as a slug, else a
    slug of its input's first words."""
    given = raw.get("id")
    own = isinstance(given, str) and bool(given.strip())
    source = given if own else raw.get("input")
    words = re.findall(r"[a-z0-9]+", source.lower()) if isinstance(source, str) else []
    base = "-".join(words if own else words[:6])[:MAX_ID].strip("-") or "case"
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}-{n}"
    taken.add(found)
    return found


def draft(shape: CaseShape, raw: Any, ident: str) -> Draft:
    """Check a written case against ``shape``; raises Refused with the reason."""
    if not isinstance(raw, dict):
        raise Refused(f"is a JSON {_json_type(raw)}, not an object")
    _bounded(raw)
    text = raw.get("input")
    if not isinstance(text, str) or not text.strip():
        raise Refused('has no "input": every case needs the request as a non-empty string')
    given = raw.get("id")
    if given is not None and not isinstance(given, str):
        raise Refused(f'has an "id" that is a {_json_type(given)}, not a string')
    for name in shape.required:
        if shape.project and name == STARTING_TESTS:
            continue  # the sandbox decides it
        _required(raw, name, shape.types.get(name, []))
    kept = {k: v for k, v in raw.items() if k not in ("id", "input", "hidden")}
    result = Draft(case={"id": ident, "input": text, **kept})
    if "files" in raw or shape.project:
        result.starting = _files(raw.get("files"), required=shape.project)
        result.case["files"] = result.starting
    if shape.project:
        _project(shape, raw, result)
    elif "hidden" in raw:
        result.notes.append("its hidden tests were dropped: this machine is not graded with them")
    try:
        Case.model_validate(result.case)
    except ValueError as error:
        raise Refused(f"is not a valid case: {error}") from None
    return result


def _bounded(raw: dict[str, Any]) -> None:
    if depth(raw) > MAX_DEPTH:
        raise Refused(f"nests more than {MAX_DEPTH} levels deep")
    total = 0
    for name, value in raw.items():
        size = len(json.dumps(value, ensure_ascii=False))
        total += size + len(name)
        if size > MAX_FIELD_CHARS:
            raise Refused(
                f"gives {name!r} {size:,} characters, over the {MAX_FIELD_CHARS:,} a field may take"
            )
    if total > MAX_CASE_CHARS:
        raise Refused(f"is {total:,} characters, over the {MAX_CASE_CHARS:,} a case may be")


def _required(raw: dict[str, Any], name: str, types: list[str]) -> None:
    value = raw.get(name)
    if value is None or value == "":
        raise Refused(f"has no {name!r}, which every case of this machine has (its checks compare with it)")
    kind = _json_type(value)
    if types and kind not in types:
        raise Refused(f"gives {name!r} a {kind}, where this machine's cases give it a {' or '.join(types)}")


def _files(value: Any, *, required: bool) -> dict[str, str]:
    """The starting files as relative paths to text, refused in words otherwise."""
    if value is None and not required:
        return {}
    if not isinstance(value, dict) or (required and not value):
        raise Refused('needs "files": an object mapping relative paths inside the project to their text')
    if len(value) > MAX_FILES:
        raise Refused(f"has {len(value)} files, over the {MAX_FILES} a case may start with")
    files: dict[str, str] = {}
    for name, text in value.items():
        path = _path(name, "file")
        if not isinstance(text, str):
            raise Refused(f"gives file {name!r} a {_json_type(text)}, not its text")
        if path in files:
            raise Refused(f"names the file {path!r} twice")
        files[path] = text
    return files


def _path(name: Any, what: str) -> str:
    if not isinstance(name, str):
        raise Refused(f"names a {what} with a {_json_type(name)}, not a path")
    normal = sandbox_path(name)
    pure = PurePosixPath(name)
    if normal is None or pure.is_absolute() or ".." in pure.parts or "\\" in name:
        raise Refused(f"names the {what} {name!r}, which is not a relative path inside the project")
    return normal


def _project(shape: CaseShape, raw: dict[str, Any], result: Draft) -> None:
    """A project case's command, reference fix and (when required) hidden tests."""
    tests = raw.get("tests")
    if tests not in shape.commands:
        allowed = " or ".join(repr(c) for c in shape.commands)
        raise Refused(f"has the tests command {tests!r}: project cases are checked with {allowed}, as given")
    if shape.answers and not raw.get("reference"):
        starts = raw.get(STARTING_TESTS)
        if starts not in ("pass", "fail"):
            raise Refused(
                f'has no "reference", so it is a case to answer, which says whether its tests start passing: '
                f'"{STARTING_TESTS}": "pass" or "fail"'
            )
        result.starts = result.case[STARTING_TESTS] = starts
        return
    if raw.get(STARTING_TESTS, "fail") != "fail":
        raise Refused(f"says {STARTING_TESTS} is {raw[STARTING_TESTS]!r}: a case's tests must start failing")
    if STARTING_TESTS in shape.required or STARTING_TESTS in raw:
        result.case[STARTING_TESTS] = "fail"
    result.fixed = apply_reference(result.starting, raw.get("reference"))
    if shape.hidden:
        result.hidden = _hidden(raw.get("hidden"), set(result.starting) | set(result.fixed))


def apply_reference(files: Mapping[str, str], reference: Any) -> dict[str, str]:
    """``files`` with the reference edits made in order: ``{path, old, new}`` replaces ``old``, which
    must occur exactly once in the file at that point; ``{path, content}`` writes a whole file."""
    if not isinstance(reference, list) or not reference:
        raise Refused(
            'needs a "reference": a list of {path, old, new} edits (or {path, content}) that fix it'
        )
    if len(reference) > MAX_EDITS:
        raise Refused(f"has {len(reference)} reference edits, over the {MAX_EDITS} a fix may take")
    fixed = dict(files)
    for number, edit in enumerate(reference, start=1):
        where = f"reference edit {number}"
        if not isinstance(edit, dict):
            raise Refused(f"has a {where} that is a {_json_type(edit)}, not an object")
        path = _path(edit.get("path"), f"{where}'s file")
        if isinstance(edit.get("content"), str) and "old" not in edit:
            fixed[path] = edit["content"]
            continue
        old, new = edit.get("old"), edit.get("new")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise Refused(f'has a {where} ({path}) without a non-empty "old" and a "new" string')
        if path not in fixed:
            raise Refused(f"has a {where} that edits {path}, which is not a file at that point")
        count = fixed[path].count(old)
        if count != 1:
            raise Refused(
                f'has a {where} whose "old" text occurs {count} times in {path} at that point; it must occur '
                "exactly once"
            )
        fixed[path] = fixed[path].replace(old, new, 1)
    if fixed == dict(files):
        raise Refused("has a reference that changes nothing")
    return fixed


def _hidden(value: Any, taken: set[str]) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise Refused(
            'needs "hidden": an object of held-back test files, {"test_edge_x.py": "<unittest file>"}'
        )
    if len(value) > MAX_HIDDEN:
        raise Refused(f"has {len(value)} hidden test files, over the {MAX_HIDDEN} a case may hold")
    for name, text in value.items():
        if not isinstance(name, str) or not TEST_NAME.fullmatch(name):
            raise Refused(f"has the hidden file {name!r}: name each one test_<words>.py, at the top level")
        if name in taken:
            raise Refused(f"has the hidden file {name!r}, which clashes with one of its project's files")
        if not isinstance(text, str) or not text.strip():
            raise Refused(f"gives the hidden file {name!r} no text")
    return dict(value)


def same_key(text: str, files: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What two cases share when they are the same case: input and files, whitespace and case aside."""
    return _plain(text), tuple(sorted((_plain(k), _plain(v)) for k, v in files.items()))


def _plain(text: str) -> str:
    return " ".join(text.split()).lower()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "null"
