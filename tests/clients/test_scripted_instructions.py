"""The scripted harness's ``"instructions": REGEX`` rule field: a rule applies only when its regex is
found in the instructions the run was given, so a script answers like a model that follows its system
prompt (what ``machine optimize`` needs to see a rewrite change the answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from machine import Budget, HarnessError, HarnessRequest, ToolContext
from machine.clients.scripted import ScriptedHarness, load_script

SCRIPT = {
    "rules": [
        {"match": "^date", "instructions": "YYYY-MM-DD", "turns": [{"text": "2024-03-01"}]},
        {"match": "^date", "instructions": "(?i)in words", "turns": [{"text": "the first of March"}]},
        {"match": "^date", "turns": [{"text": "March 1, 2024"}]},
    ]
}


def request(text: str, instructions: str) -> HarnessRequest:
    return HarnessRequest(
        run_id="r1",
        machine="dates",
        instructions=instructions,
        input=text,
        model="scripted",
        tools=[],
        tool_context=ToolContext(run_id="r1"),
        budget=Budget(None),
    )


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def test_a_rule_applies_only_when_its_regex_is_in_the_instructions(tmp_path: Path) -> None:
    harness = ScriptedHarness(write(tmp_path, SCRIPT))
    iso = await harness.run(request("date of the first Friday", "Answer as YYYY-MM-DD."))
    words = await harness.run(request("date of the first Friday", "Answer IN WORDS."))
    plain = await harness.run(request("date of the first Friday", "Answer with the date."))
    assert (iso.output, words.output, plain.output) == ("2024-03-01", "the first of March", "March 1, 2024")


async def test_the_instructions_regex_is_searched_anywhere_in_them(tmp_path: Path) -> None:
    harness = ScriptedHarness(write(tmp_path, SCRIPT))
    long = "You answer questions about dates.\n\nAlways write the date as YYYY-MM-DD, nothing else."
    assert (await harness.run(request("date today", long))).output == "2024-03-01"
    # The input alone never satisfies the instructions field: the text is in the input, not the prompt.
    assert (await harness.run(request("date as YYYY-MM-DD", "Answer."))).output == "March 1, 2024"


async def test_no_rule_fits_these_instructions_is_a_harness_error(tmp_path: Path) -> None:
    only = {"rules": [{"match": ".", "instructions": "YYYY-MM-DD", "turns": [{"text": "2024-03-01"}]}]}
    path = write(tmp_path, only)
    with pytest.raises(HarnessError, match=f"no rule in {path} matches the input 'date'"):
        await ScriptedHarness(path).run(request("date", "Answer with the date."))


def test_an_invalid_instructions_regex_is_refused_when_the_script_loads(tmp_path: Path) -> None:
    bad = {
        "rules": [
            {"match": ".", "turns": [{"text": "a"}]},
            {"match": ".", "instructions": "([", "turns": [{"text": "b"}]},
        ]
    }
    path = write(tmp_path, bad)
    with pytest.raises(
        HarnessError, match=rf"script {path} is malformed at rules\.1\.instructions:"
    ) as caught:
        load_script(path)
    assert "'([' is not a regular expression" in str(caught.value)
    with pytest.raises(HarnessError, match="is not a regular expression"):
        ScriptedHarness(path)


def test_the_instructions_field_must_be_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, {"rules": [{"match": ".", "instructions": ["x"], "turns": [{"text": "a"}]}]})
    with pytest.raises(HarnessError, match=r"malformed at rules\.0\.instructions"):
        load_script(path)
