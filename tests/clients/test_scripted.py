import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from machine import Budget, HarnessError, HarnessRequest, ToolContext, tool
from machine.clients.scripted import ScriptedHarness, load_script

QWEN = "Qwen/Qwen3.6-35B-A3B"  # $0.54 input, $0.108 cached input, $1.335 output per million tokens


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def request(text: str, *, model: str = "scripted", budget: Budget | None = None) -> HarnessRequest:
    return HarnessRequest(
        run_id="r1",
        machine="calc",
        instructions="Add.",
        input=text,
        model=model,
        tools=[add],
        tool_context=ToolContext(run_id="r1"),
        budget=budget if budget is not None else Budget(None),
    )


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def rule(match: str, *texts: str) -> dict[str, Any]:
    return {"match": match, "turns": [{"text": t} for t in texts]}


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({}, "rules"),
        ({"rules": []}, "rules"),
        ({"rules": [{"match": "x", "turns": []}]}, "rules.0.turns"),
        ({"rules": [rule("ok", "a"), {"match": "(", "turns": [{"text": "a"}]}]}, "rules.1.match"),
        ({"rules": [{"match": "x", "turns": [{"txt": "typo"}]}]}, "rules.0.turns.0.txt"),
        (
            {"rules": [{"match": "x", "turns": [{"tool_calls": [{"arguments": {}}]}]}]},
            "rules.0.turns.0.tool_calls.0.name",
        ),
        (
            {"rules": [{"match": "x", "turns": [{"usage": {"input_tokens": "many"}}]}]},
            "rules.0.turns.0.usage.input_tokens",
        ),
    ],
)
def test_malformed_script_names_path_and_location(tmp_path: Path, data: Any, where: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(HarnessError, match=f"script {path} is malformed at {where}:"):
        load_script(path)


def test_bad_regex_says_why(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="is not a regular expression"):
        load_script(write(tmp_path, {"rules": [{"match": "(", "turns": [{"text": "a"}]}]}))


def test_invalid_json_names_path(tmp_path: Path) -> None:
    path = write(tmp_path, "{rules")
    with pytest.raises(HarnessError, match=f"script {path} is not valid JSON"):
        load_script(path)


def test_missing_script_says_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="does not exist; pass script=PATH"):
        ScriptedHarness(tmp_path / "nope.json")


async def test_first_matching_rule_wins(tmp_path: Path) -> None:
    harness = ScriptedHarness(
        write(tmp_path, {"rules": [rule("^add", "first"), rule("add", "second"), rule(".", "any")]})
    )
    assert (await harness.run(request("add 2 and 3"))).output == "first"
    assert (await harness.run(request("please add"))).output == "second"
    assert (await harness.run(request("hello"))).output == "any"


async def test_no_matching_rule_is_harness_error_naming_script(tmp_path: Path) -> None:
    path = write(tmp_path, {"rules": [rule("^add", "x")]})
    with pytest.raises(HarnessError, match=f"no rule in {path} matches the input 'subtract'"):
        await ScriptedHarness(path).run(request("subtract"))


async def test_turns_drive_tool_use(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "5"}]
    result = await ScriptedHarness(write(tmp_path, {"rules": [{"match": ".", "turns": turns}]})).run(
        request("go")
    )
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant"]
    assert result.trajectory[2].content == "5"
    assert result.output == "5"


async def test_script_running_out_ends_the_run(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}]
    result = await ScriptedHarness(write(tmp_path, {"rules": [{"match": ".", "turns": turns}]})).run(
        request("go")
    )
    assert result.stop_reason == "end_turn"
    assert result.trajectory[-1].role == "assistant"
    assert result.output == ""


async def test_usage_is_charged_at_the_models_price(tmp_path: Path) -> None:
    usage = {"input_tokens": 1_000_000, "cached_input_tokens": 400_000, "output_tokens": 200_000}
    turns = [{"text": "a", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}], "usage": usage}]
    turns.append({"text": "b", "usage": {"output_tokens": 1_000_000}})
    budget = Budget(5)
    harness = ScriptedHarness(write(tmp_path, {"rules": [{"match": ".", "turns": turns}]}))
    result = await harness.run(request("go", model=QWEN, budget=budget))
    expected = (600_000 * 0.54 + 400_000 * 0.108 + 200_000 * 1.335 + 1_000_000 * 1.335) / 1_000_000
    assert result.cost_usd == pytest.approx(expected)
    assert budget.spent_by_kind == pytest.approx({"runs": expected})
    assert result.usage.output_tokens == 1_200_000


async def test_scripted_model_is_free_under_a_budget(tmp_path: Path) -> None:
    turns = [{"text": "a", "usage": {"input_tokens": 100, "output_tokens": 100}}]
    budget = Budget(1)
    result = await ScriptedHarness(write(tmp_path, {"rules": [{"match": ".", "turns": turns}]})).run(
        request("go", budget=budget)
    )
    assert result.cost_usd == 0.0
    assert budget.spent == 0.0


async def test_a_replayed_model_with_no_price_costs_nothing_under_a_budget(tmp_path: Path) -> None:
    turns = [{"text": "a", "usage": {"input_tokens": 100, "output_tokens": 100}}]
    budget = Budget(1)
    result = await ScriptedHarness(write(tmp_path, {"rules": [{"match": ".", "turns": turns}]})).run(
        request("go", model="teacher", budget=budget)  # a scripted teacher: in no price table
    )
    assert result.cost_usd == 0.0 and budget.spent == 0.0
    assert result.usage.output_tokens == 100  # what the script says it used is still recorded


async def test_a_cancelled_scripted_run_stops_at_its_model_call(tmp_path: Path) -> None:
    harness = ScriptedHarness(write(tmp_path, {"rules": [rule(".", "done")]}))
    finished = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await harness.run(request("go"))
        finished = True
    assert scope.cancelled_caught and not finished


async def test_a_delay_replays_a_slow_model_and_cancelling_ends_the_wait(tmp_path: Path) -> None:
    slow = {"rules": [{"match": ".", "turns": [{"text": "late", "delay": 0.2}]}]}
    harness = ScriptedHarness(write(tmp_path, slow))
    began = time.monotonic()
    assert (await harness.run(request("go"))).output == "late"
    assert time.monotonic() - began >= 0.2
    stuck = ScriptedHarness(
        write(tmp_path, {"rules": [{"match": ".", "turns": [{"text": "x", "delay": 600}]}]})
    )
    began = time.monotonic()
    with anyio.move_on_after(0.1) as scope:
        await stuck.run(request("go"))
    assert scope.cancelled_caught
    assert time.monotonic() - began < 10  # the ten-minute wait ended when the run was cancelled


@pytest.mark.parametrize("delay", [-1, "inf", 3601])
def test_a_delay_must_be_a_sensible_number_of_seconds(tmp_path: Path, delay: Any) -> None:
    fine = {"rules": [{"match": ".", "turns": [{"text": "x", "delay": 0.5}]}]}
    assert load_script(write(tmp_path, fine)).rules[0].turns[0].delay == 0.5
    script = {"rules": [{"match": ".", "turns": [{"text": "x", "delay": delay}]}]}
    with pytest.raises(HarnessError, match=r"malformed at rules\.0\.turns\.0\.delay"):
        load_script(write(tmp_path, script))
