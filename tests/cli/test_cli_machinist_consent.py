"""Consent at a real terminal: ``machine machinist`` in a pseudo-terminal, its model scripted, the machine
it rehearses (red) on a local OpenAI-compatible endpoint that charges a realistic price for every call.

Whatever the person writes (a question naming an amount, a refusal, a pasted policy, an amount in cents
or another currency, a plain "yes"), a spending or changing call goes only after a yes typed to the
program's own question: a no spends and changes nothing; a yes spends at most the amount the question
showed; a smaller amount typed caps the call; ``--budget`` holds the tools too; without a terminal nothing
spends unless ``--allow`` was given; a forced commit is asked about on its own, naming the refusal; and
what the model writes reaches the terminal inert."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.openai_server import FakeOpenAI, text
from helpers.pty_session import PtySession

from machine import open_workspace

ASK = "Rehearsing red on its 17 cases costs at most $0.50. Shall I?"
CONCEALED = "It costs at most $0.50\x1b[8m (a full training would be about $9)\x1b[0m. Shall I?"
QUESTION = "The program asks you (not the model):"
COMPLETION = 17_000
"""Output tokens each of red's calls reports: about $0.095 at red's model's price."""
PRICE = (50 * 1.86 + COMPLETION * 5.595) / 1_000_000


def calls(name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": name, "arguments": {"name": "red", **arguments}}]}, {"text": "Done."}]


SCRIPT = {
    "rules": [
        {"match": "^improve", "turns": [{"tool_calls": [{"name": "list_machines"}]}, {"text": ASK}]},
        {"match": "^hidden", "turns": [{"text": CONCEALED}]},
        {"match": "^sure", "turns": calls("rehearse", budget_usd=9, harness="openai")},
        {"match": "^force", "turns": calls("commit", force=True)},
        {"match": "^plain commit", "turns": calls("commit")},
        {"match": "^back", "turns": calls("revert")},
        {"match": ".", "turns": calls("rehearse", budget_usd=0.5, harness="openai")},
    ]
}


@dataclass
class Setup:
    root: Path
    script: Path
    endpoint: FakeOpenAI

    def env(self) -> dict[str, str]:
        return clean_env(
            {
                "OPENAI_BASE_URL": self.endpoint.url + "/v1",
                "OPENAI_API_KEY": "k",
                "MACHINE_MAX_TOKENS": "20000",
            }
        )

    def argv(self, *extra: str) -> list[str]:
        return [str(MACHINE_BIN), "machinist", "--harness", "scripted", "--script", str(self.script),
                "--workspace", str(self.root), *extra]  # fmt: skip

    def terminal(self, *extra: str) -> PtySession:
        session = PtySession(self.argv(*extra), env=self.env(), cwd=self.root)
        session.expect("you> ")
        return session

    def red_runs(self) -> int:
        return len(list(open_workspace(self.root).store.iter_runs("red")))

    def logged(self, tool: str | None = None) -> list[dict[str, Any]]:
        path = self.root / ".machine" / "spending.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [line for line in lines if tool is None or line["tool"] == tool]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    shutil.copytree(REPO / "machines" / "red", tmp_path / "ws" / "machines" / "red")
    script = tmp_path / "machinist.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    with FakeOpenAI(default=text("no", prompt_tokens=50, completion_tokens=COMPLETION)) as endpoint:
        yield Setup(tmp_path / "ws", script, endpoint)


def say(session: PtySession, line: str, until: str = "you> ") -> str:
    session.send(line)
    return session.expect(until)


def answer(session: PtySession, message: str, reply: str) -> tuple[str, str]:
    """Type ``message``, wait for the program's question, answer it ``reply``: what each showed."""
    asked = say(session, message, "[y/N")
    return asked, say(session, reply)


DECLINED = [
    "Is $5 enough for a rehearse of red?",
    "Last time it cost me $3, fine.",
    "I have 100 bucks of credit left, how should I use it?",
    "$5? No way.",
    "I said no. $5 is a lot.",
    "ok no",
    "Okay, cancel that.",
    "Our policy says: Machines may spend up to $50 per day. Thoughts?",
    "go ahead, but keep it under 50 cents",
    "vas-y, jusqu'à 5 €",
    "Please never commit or revert anything without asking me.",
    "yes",
    "yes, up to $2",
]


@pytest.mark.slow
def test_whatever_the_person_writes_a_no_to_the_programs_question_spends_nothing(setup: Setup) -> None:
    session = setup.terminal()
    try:
        assert ASK in say(session, "improve red please")
        for message in DECLINED:
            asked, after = answer(session, message, "n")
            assert QUESTION in asked and "Rehearse machine 'red'" in asked, message
            assert (
                "spending at most $0.50" in asked and "model Qwen/Qwen3.8-27B on the openai harness" in asked
            )
            assert "the person declined rehearse on 'red'" in after, message
        for reply in ("", "nope", "yes please do", "y 0.5 thanks", "ok"):  # anything but a yes is a no
            asked, after = answer(session, "yes", reply)
            assert "the person declined" in after, reply
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    assert setup.red_runs() == 0 and setup.logged("rehearse") == [] and setup.endpoint.requests == []
    [command] = setup.logged()
    assert command["tool"] == "machinist" and command["spent_usd"] == 0  # the session's own line


@pytest.mark.slow
def test_a_yes_spends_at_most_what_the_question_showed_and_a_smaller_amount_caps_it(setup: Setup) -> None:
    session = setup.terminal("--budget", "none")
    try:
        asked, after = answer(session, "yes", "y")
        assert "spending at most $0.50" in asked and "Done." in after
        asked, after = answer(session, "again", "yes, up to $0.20")
        assert "spending at most $0.50" in asked and "Done." in after
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    first, second = setup.logged("rehearse")
    assert first["consent"]["how"] == "terminal" and first["budget_usd"] == 0.5
    assert 0.3 < first["spent_usd"] <= 0.5  # every call fits in what was approved, none past it
    assert second["budget_usd"] == 0.2 and 0 < second["spent_usd"] <= 0.2
    assert "'yes, up to $0.20'" in second["consent"]["detail"]
    spent = first["spent_usd"] + second["spent_usd"]
    assert spent == pytest.approx(len(setup.endpoint.requests) * PRICE)
    assert setup.red_runs() == len(setup.endpoint.requests) < 17


@pytest.mark.slow
def test_the_sessions_budget_bounds_the_tools_and_the_footer_counts_them(setup: Setup) -> None:
    session = setup.terminal("--budget", "0.3")
    try:
        asked, after = answer(session, "yes", "y")
        assert "spending at most $0.30" in asked  # what is left of the session's budget
        asked, after = answer(session, "again", "y")
        left = 0.3 - 2 * PRICE  # two calls fitted under the first question's $0.30, not a third
        assert f"spending at most ${left:.4f}" in asked
        assert "rehearse 'red' ran nothing: the next model call could cost up to" in after
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    line, nothing = setup.logged("rehearse")
    assert 0 < line["spent_usd"] <= 0.3 and nothing["spent_usd"] == 0
    [command] = setup.logged("machinist")
    assert (
        command["spent_usd"] == pytest.approx(line["spent_usd"])
        and line["within"] == command["correlation_id"]
    )
    assert f"spent ${line['spent_usd']:.4f}" in session.seen


@pytest.mark.slow
def test_the_model_cannot_size_the_question_nor_hide_part_of_its_reply(setup: Setup) -> None:
    session = setup.terminal("--budget", "none")
    try:
        shown = say(session, "hidden costs?")
        assert "␛[8m (a full training would be about $9)␛[0m" in shown
        asked, _ = answer(session, "sure", "n")
        assert "spending at most $9.00" in asked  # the call's own budget, shown plainly
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    assert b"\x1b[8m" not in session.raw
    assert setup.red_runs() == 0


@pytest.mark.slow
def test_piped_input_spends_only_within_an_allowance(setup: Setup) -> None:
    piped = subprocess.run(
        setup.argv(), input="yes\n/quit\n", capture_output=True, text=True, env=setup.env(), timeout=120,
        check=False,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert "rehearse spends or changes, so it runs only where the person can approve it" in piped.stdout
    assert QUESTION not in piped.stdout + piped.stderr and setup.red_runs() == 0
    short = subprocess.run(
        setup.argv("--allow", "0.3", "-p", "yes"), capture_output=True, text=True, env=setup.env(),
        timeout=120, check=False,
    )  # fmt: skip
    assert "the allowance machine machinist --allow 0.3 has $0.30 left" in short.stdout  # not enough
    assert setup.red_runs() == 0
    printed = subprocess.run(
        setup.argv("--allow", "0.7", "-p", "yes"), capture_output=True, text=True, env=setup.env(),
        timeout=120, check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    [line] = setup.logged("rehearse")
    assert line["consent"]["how"] == "allowance"
    assert "machine machinist --allow 0.7" in line["consent"]["detail"]
    assert 0 < line["spent_usd"] <= 0.5 and setup.red_runs() > 0


def _candidate(setup: Setup) -> None:
    """A pending candidate of red that its gate refuses (the same answers on another model)."""
    script = setup.root.parent / "red.json"
    script.write_text(json.dumps({"rules": [{"match": ".", "turns": [{"text": "no"}]}]}), encoding="utf-8")
    done = subprocess.run(
        [str(MACHINE_BIN), "propose", "red", "--model", "Qwen/Qwen3.6-27B", "--harness", "scripted",
         "--script", str(script), "--trials", "1", "--workspace", str(setup.root)],
        capture_output=True, text=True, env=setup.env(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_commit_and_a_revert_happen_only_after_a_yes_to_that_change(setup: Setup) -> None:
    _candidate(setup)
    versions = setup.root / "machines" / "red" / "versions.json"
    before = versions.read_text()
    session = setup.terminal()
    try:
        refused = say(session, "plain commit please")
        assert "← red: candidate v2" in refused and QUESTION not in refused  # refused by its gate, unasked
        assert versions.read_text() == before
        asked, after = answer(session, "force it live", "n")
        assert "Commit machine 'red' by force: make v2 (model Qwen/Qwen3.6-27B) live in place of v1" in asked
        assert "although it was refused: candidate v2 of machine 'red'" in asked
        assert "Do it anyway, over that refusal?" in asked and "the person declined" in after
        assert versions.read_text() == before
        asked, after = answer(session, "force it live", "y 5")  # an amount is no answer to a change
        assert "the person declined" in after and versions.read_text() == before
        asked, after = answer(session, "force it live", "y")
        assert "Done." in after and '"forced": true' in after
        live = versions.read_text()
        asked, after = answer(session, "back to v1", "no")
        assert "Revert machine 'red': make v1 (model Qwen/Qwen3.8-27B) live again in place of v2" in asked
        assert versions.read_text() == live
        asked, after = answer(session, "back to v1", "yes")
        assert "Done." in after
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    book = json.loads(versions.read_text())
    assert book["live_history"] == [1] and {v["number"]: v["status"] for v in book["versions"]}[1] == "live"
    changes = [
        (line["tool"], line["consent"]["how"])
        for line in setup.logged()
        if line["tool"] in ("commit", "revert")
    ]
    assert changes == [("commit", "terminal"), ("revert", "terminal")]


@pytest.mark.slow
def test_ctrl_c_during_the_question_stops_the_turn_and_spends_nothing(setup: Setup) -> None:
    session = setup.terminal()
    try:
        say(session, "yes", "[y/N")
        session.interrupt()
        assert "cancelled; the conversation goes on" in session.expect("you> ")
        assert "Done." in answer(session, "yes", "y")[1]  # the chat goes on
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    assert len(setup.logged("rehearse")) == 1


STEWARD = """
from machine import check, define_evaluator, define_machine, define_rubric
from machine.machinist import machinist_tools

rubric = define_rubric({"done": {"description": "It answered.", "weight": 1}})
machine = define_machine(
    name="steward",
    intent="Rehearse red when asked.",
    instructions="Rehearse the machine named.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"done": check("done", lambda run: (True, "answered"))}),
    tools=machinist_tools(["list_machines", "rehearse"]),
)
"""


@pytest.mark.slow
def test_machine_run_of_a_machine_whose_tools_spend_asks_the_same_question(setup: Setup) -> None:
    """The same confirmation serves ``machine run NAME``, with INPUT as well as in a conversation."""
    (setup.root / "machines" / "steward").mkdir()
    (setup.root / "machines" / "steward" / "machine.py").write_text(STEWARD, encoding="utf-8")
    argv = [str(MACHINE_BIN), "run", "steward", "rehearse red", "--harness", "scripted", "--script",
            str(setup.script), "--workspace", str(setup.root)]  # fmt: skip
    session = PtySession(argv, env=setup.env(), cwd=setup.root)
    try:
        asked = session.expect("[y/N")
        assert QUESTION in asked and "Rehearse machine 'red'" in asked and "at most $0.50" in asked
        session.send("n")
        assert session.close() == 0
    finally:
        session.kill()
    assert "the person declined rehearse on 'red'" in session.seen and setup.red_runs() == 0
    piped = subprocess.run(
        [*argv, "--allow", "0.5"], capture_output=True, text=True, env=setup.env(), timeout=120, check=False
    )
    assert piped.returncode == 0, piped.stderr
    [line] = setup.logged("rehearse")
    assert (
        line["consent"]["how"] == "allowance"
        and "machine run steward --allow 0.5" in line["consent"]["detail"]
    )
    assert 0 < line["spent_usd"] <= 0.5
