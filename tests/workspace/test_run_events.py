"""A workspace tells its event log of each run as it goes: started, each step (the tool call, its result,
the answer), graded, finished; a suite's runs and a failed run too. The log is what a dashboard follows."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.weather_runs import weather_machine

from machine import open_workspace, run_suite
from machine.clients.scripted import Script, ScriptedHarness
from machine.runs import EVENTS_FILE
from machine.spec import Case

CALLS = ScriptedHarness(
    Script.model_validate(
        {
            "rules": [
                {
                    "match": "Oslo",
                    "turns": [
                        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
                        {"text": "18 C"},
                    ],
                },
            ]
        }
    )
)


def logged(root: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (root / ".machine" / EVENTS_FILE).read_text().splitlines()]


async def test_a_run_is_told_as_it_goes(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=CALLS)
    run = await ws.run(weather_machine(), "weather in Oslo?", grade=True)
    ws.events.flush()  # written within a few milliseconds; a reader in this process asks for them now
    events = logged(tmp_path)
    assert [e["kind"] for e in events] == ["run_started", "step", "step", "step", "run_finished"]
    assert {e["run"] for e in events} == {run.id} and {e["machine"] for e in events} == {"weather"}
    started, call, result, answer, finished = events
    assert started["input"] == "weather in Oslo?" and started["model"] == run.model
    assert (call["type"], call["tool"]) == ("tool_call", "get_weather")
    assert (result["type"], result["text"]) == ("tool_result", "18 C")
    assert (answer["type"], answer["text"]) == ("assistant", "18 C")
    regraded = await ws.grade(run, weather_machine(), store=False)  # graded on its own: told so
    ws.events.flush()
    assert logged(tmp_path)[-1] | {"at": 0} == {
        "at": 0,
        "kind": "graded",
        "run": run.id,
        "machine": "weather",
        "score": 1.0,
        "passed": True,
    }
    assert regraded.score == 1.0
    assert (finished["status"], finished["score"], finished["output"]) == ("ok", 1.0, "18 C")
    assert float(str(started["at"])) <= float(str(finished["at"]))


async def test_a_failed_run_and_a_suites_runs_are_told(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=CALLS)
    spec = weather_machine()
    cases = [Case(id="ok", input="Oslo"), Case(id="bad", input="boom")]
    await run_suite(ws, spec, cases, trials=2)
    await ws.aclose()  # the end of a command writes its events
    finished = [e for e in logged(tmp_path) if e["kind"] == "run_finished"]
    assert len(finished) == 4
    failed = [e for e in finished if e["status"] == "error"]
    assert len(failed) == 2 and all("boom" in str(e["error"]) for e in failed)  # no rule answers it
    stored = {r.id for r in ws.store.iter_runs("weather")}
    assert {e["run"] for e in finished} == stored
