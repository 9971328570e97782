"""The chatbot machine: its length and filler checks, its judged criteria left UNSCORED, and its
conversations with persona, the simulated user that plays each scenario case."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from machine import Message, Run, Workspace, run_suite
from machine.cli import cli
from machine.clients.scripted import ScriptedHarness
from machine.grade import CheckGrader
from machine.workspace import converse

REPO = Path(__file__).resolve().parents[2]


def chatbot_module(ws: Workspace) -> ModuleType:
    grader = ws.load("chatbot").evaluator.graders["no_filler"]
    assert isinstance(grader, CheckGrader)
    return sys.modules[grader.fn.__module__]


def make_run(output: str, question: str = "What is the boiling point of water?") -> Run:
    return Run(
        machine="chatbot",
        model="echo",
        harness="echo",
        input=question,
        output=output,
        trajectory=[Message(role="user", content=question), Message(role="assistant", content=output)],
    )


async def criteria(ws: Workspace, output: str) -> dict[str, tuple[float | None, str]]:
    graded = await ws.grade(make_run(output), store=False)
    assert graded.scorecard is not None
    return {name: (c.score, c.reason) for name, c in graded.scorecard.criteria.items()}


def test_rubric_and_graders(ws: Workspace) -> None:
    chatbot = ws.load("chatbot")
    assert list(chatbot.rubric) == ["answers", "honest", "concise", "no_filler"]
    assert chatbot.rubric["answers"].weight == 3
    kinds = {name: grader.kind for name, grader in chatbot.evaluator.graders.items()}
    assert kinds == {"answers": "judge", "honest": "judge", "concise": "check", "no_filler": "check"}
    assert chatbot.model == "Qwen/Qwen3.8-27B"
    assert chatbot.tools == ()
    assert len(ws.cases("chatbot")) >= 8


@pytest.mark.parametrize(("words", "score"), [(1, 1.0), (150, 1.0), (151, 0.0), (400, 0.0)])
async def test_concise_counts_words(ws: Workspace, words: int, score: float) -> None:
    result = await criteria(ws, " ".join(["word"] * words))
    assert result["concise"][0] == score
    assert str(words) in result["concise"][1]


@pytest.mark.parametrize("output", ["", "   \n\t "])
async def test_empty_reply_is_not_concise_but_zero(ws: Workspace, output: str) -> None:
    assert (await criteria(ws, output))["concise"] == (0.0, "the reply is empty")


@pytest.mark.parametrize(
    ("output", "filler"),
    [
        ("Great question! Water boils at 100 °C.", "great question"),
        ("great question: 100 °C.", "great question"),
        ("**Great question!** 100 °C.", "great question"),
        ("\u201cGood question.\u201d 100 °C.", "good question"),
        ("> _Excellent question_ -- 100 °C.", "excellent question"),
        ("Certainly! It boils at 100 °C.", "certainly"),
        ("Absolutely, it is 100 °C.", "absolutely"),
        ("Of course! 100 °C.", "of course"),
        ("Sure, 100 °C at sea level.", "sure"),
        ("As an AI, I cannot boil water, but 100 °C.", "as an ai"),
        ("As an AI language model, I think 100 °C.", "as an ai"),
        ("I\u2019d be happy to help: 100 °C.", "i'd be happy to"),
        ("Thanks for asking! 100 °C.", "thanks for asking"),
        ("Water boils at 100 °C at sea level.", None),
        ("Certainly not: at altitude it boils lower.", None),
        ("Of course.", None),
        ("Surely you mean at sea level? 100 °C.", None),
        ("Greatness aside, 100 °C.", None),
        ("As anyone knows, 100 °C.", None),
        ("", None),
    ],
)
def test_filler_openings(ws: Workspace, output: str, filler: str | None) -> None:
    assert chatbot_module(ws).filler_opening(output) == filler


async def test_no_filler_reason_names_the_phrase(ws: Workspace) -> None:
    result = await criteria(ws, "Great question! 100 °C.")
    assert result["no_filler"] == (0.0, "opens with the filler 'great question'")
    assert (await criteria(ws, "100 °C."))["no_filler"][0] == 1.0


async def test_judged_criteria_are_unscored_not_zero(ws: Workspace) -> None:
    graded = await ws.grade(make_run("Water boils at 100 °C at sea level."), store=False)
    assert graded.scorecard is not None
    for name in ("answers", "honest"):
        result = graded.scorecard.criteria[name]
        assert result.score is None
        assert result.reason
    assert sorted(graded.scorecard.unscored) == ["answers", "honest"]
    assert graded.score == 1.0  # the checks alone, with the judged criteria kept out of the mean


# --- conversations with persona, the simulated user ---------------------------------------------------

SCRIPT = REPO / "machines" / "chatbot" / "script.json"


def test_persona_is_the_counterpart_and_only_its_done_ends_a_conversation(ws: Workspace) -> None:
    chatbot = ws.load("chatbot")
    side = chatbot.counterpart
    assert side is not None and side.until is not None
    assert side.machine is ws.load("persona")  # imported by chatbot's file, the very machine the loader gives
    assert side.max_turns == 8
    said = make_run("Thanks, that's what I needed. [done]")
    assert side.until(said.model_copy(update={"machine": "persona"}))
    assert not side.until(said)  # chatbot writing the marker ends nothing
    assert not side.until(make_run("Thanks!").model_copy(update={"machine": "persona"}))


async def test_every_scenario_is_a_conversation_the_script_finishes(ws: Workspace) -> None:
    chatbot = ws.load("chatbot")
    harness = ScriptedHarness(SCRIPT)
    for case in ws.cases(chatbot):
        conversation = await converse(ws, chatbot, case, harness=harness, grade=True, grade_counterpart=True)
        turns = conversation.turns
        assert conversation.ended == "until", (case.id, [t.output for t in turns])
        assert [t.machine for t in turns] == ["persona", "chatbot"] * (len(turns) // 2) + ["persona"]
        assert turns[-1].output.endswith("[done]")
        graded = conversation.graded_run
        assert graded is turns[-2] and graded.case_id == case.id
        assert graded.score == 1.0, (case.id, graded.scorecard)  # the checks; the judges are UNSCORED here
        assert len(graded.history) == len(turns) - 3  # every earlier exchange of the conversation
        assert (
            conversation.counterpart_graded_run is not None
            and conversation.counterpart_graded_run.score == 1.0
        )


async def test_suite_of_chatbot_runs_conversations(ws: Workspace) -> None:
    chatbot = ws.load("chatbot")
    cases = ws.cases(chatbot)
    report = await run_suite(ws, chatbot, cases, harness=ScriptedHarness(SCRIPT))
    assert (report.runs, report.errors, report.mean) == (len(cases), 0, 1.0)
    # the judges (4 of 6 weight) are UNSCORED here: no run's pass is decided on the checks alone
    assert (report.pass_rate, report.undecided) == (None, len(cases))
    stored = list(ws.store.iter_runs())
    assert {r.machine for r in stored} == {"chatbot", "persona"}
    assert len({r.conversation_id for r in stored}) == len(cases)
    assert sum(r.scorecard is not None for r in stored) == len(cases)


def test_converse_and_suite_commands_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands the docs show, on a copy of the two machines so the repository's store is untouched."""
    for name in ("chatbot", "persona"):
        shutil.copytree(REPO / "machines" / name, tmp_path / "machines" / name)
    monkeypatch.chdir(tmp_path)
    for setting in ("MACHINE_WORKSPACE", "MACHINE_JUDGE_MODEL", "TINKER_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(setting, raising=False)  # the judges stay UNSCORED, as everywhere in these tests
    offline = ["--harness", "scripted", "--script", "machines/chatbot/script.json"]
    runner = CliRunner()
    talked = runner.invoke(cli, ["converse", "chatbot", "compound-interest", "--eval", *offline])
    assert talked.exit_code == 0, talked.output
    assert "[5] persona" in talked.stdout and "$1,157.63" in talked.stdout
    assert "chatbot's last turn" in talked.stdout and "persona's last turn" in talked.stdout
    measured = runner.invoke(cli, ["suite", "chatbot", "--json", *offline])
    assert measured.exit_code == 0, measured.output
    summary = json.loads(measured.stdout)["summary"]
    assert (summary["runs"], summary["errors"], summary["mean"]) == (11, 0, 1.0)
