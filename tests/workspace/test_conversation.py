"""Conversations between a machine and its counterpart, on real workspaces in tmp_path with the scripted
harness: who speaks first, each side's view of the history, how conversations end, what is stored and
graded, and the suite on conversations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import machine.measure._pool as pool_module  # the batch size, set small on purpose
from machine import (
    BadInputError,
    Budget,
    BudgetExceeded,
    Case,
    Counterpart,
    DefinitionError,
    HarnessRequest,
    HarnessResult,
    Machine,
    Message,
    Run,
    UnknownPriceError,
    Workspace,
    check,
    define_child,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    run_suite,
)
from machine.clients.scripted import Script, ScriptedHarness
from machine.workspace import converse

DONE = "[done]"


def asker(model: str = "asker-model") -> Machine:
    """The counterpart: asks two questions, then says it is done."""
    rubric = define_rubric({"polite": "Says thanks when done."})
    return define_machine(
        name="asker",
        intent="Ask questions.",
        instructions="Ask what the scenario wants to know.",
        model=model,
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"polite": check("thanks", lambda run: "thanks" in run.output)}),
    )


def asker_is_done(run: Run) -> bool:
    return run.machine == "asker" and DONE in run.output


def helper(
    *,
    until: Any = asker_is_done,
    max_turns: int = 8,
    model: str = "helper-model",
    other: Machine | None = None,
) -> Machine:
    """The machine under test: answers; its one criterion checks the reply starts with "answer"."""
    rubric = define_rubric({"answers": "Replies with an answer."})
    return define_machine(
        name="helper",
        intent="Answer questions.",
        instructions="Answer the question.",
        model=model,
        rubric=rubric,
        evaluator=define_evaluator(
            rubric, {"answers": check("starts_with_answer", lambda run: run.output.startswith("answer"))}
        ),
        counterpart=Counterpart(machine=other or asker(), until=until, max_turns=max_turns),
    )


# scenario -> q1 -> a1 -> q2 -> a2 -> "thanks [done]": five turns, the asker's first and last.
RULES: list[dict[str, Any]] = [
    {"match": "^scenario", "turns": [{"text": "question one"}]},
    {"match": "^question one", "turns": [{"text": "answer one"}]},
    {"match": "^answer one", "turns": [{"text": "question two"}]},
    {"match": "^question two", "turns": [{"text": "answer two"}]},
    {"match": "^answer two", "turns": [{"text": "thanks [done]"}]},
]
CASE = Case(id="first", input="scenario: you want two answers")


def scripted(rules: list[dict[str, Any]] | None = None) -> ScriptedHarness:
    return ScriptedHarness(Script.model_validate({"rules": rules or RULES}))


def workspace(tmp_path: Path, harness: Any = None, budget: Budget | None = None) -> Workspace:
    return open_workspace(tmp_path, harness=harness or scripted(), budget=budget)


def stored(ws: Workspace, conversation_id: str) -> list[Run]:
    found = [run for run in ws.store.iter_runs() if run.conversation_id == conversation_id]
    return sorted(found, key=lambda run: run.created_at)


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


# --- turns and histories --------------------------------------------------------------------------


async def test_the_counterpart_speaks_first_and_the_sides_alternate(tmp_path: Path) -> None:
    conversation = await converse(workspace(tmp_path), helper(), CASE)
    turns = conversation.turns
    assert [t.machine for t in turns] == ["asker", "helper", "asker", "helper", "asker"]
    assert [t.input for t in turns] == [
        CASE.input,
        "question one",
        "answer one",
        "question two",
        "answer two",
    ]
    assert [t.output for t in turns] == [
        "question one",
        "answer one",
        "question two",
        "answer two",
        "thanks [done]",
    ]
    assert conversation.ended == "until"
    assert (conversation.machine, conversation.counterpart, conversation.case_id) == (
        "helper",
        "asker",
        "first",
    )


async def test_each_side_sees_the_other_as_the_user(tmp_path: Path) -> None:
    turns = (await converse(workspace(tmp_path), helper(), CASE)).turns
    assert [texts(t.history) for t in turns] == [
        [],
        [],
        [("user", CASE.input), ("assistant", "question one")],
        [("user", "question one"), ("assistant", "answer one")],
        [
            ("user", CASE.input),
            ("assistant", "question one"),
            ("user", "answer one"),
            ("assistant", "question two"),
        ],
    ]


async def test_the_machines_last_turn_holds_the_whole_conversation(tmp_path: Path) -> None:
    conversation = await converse(workspace(tmp_path), helper(), CASE)
    last = conversation.graded_run
    assert last is conversation.turns[3]
    assert texts([*last.history, *last.trajectory]) == [
        ("user", "question one"),
        ("assistant", "answer one"),
        ("user", "question two"),
        ("assistant", "answer two"),
    ]


async def test_a_sides_own_tool_calls_stay_in_its_own_history(tmp_path: Path) -> None:
    rules = [
        {
            "match": "^question one",
            "turns": [{"tool_calls": [{"name": "nothing_here", "arguments": {}}]}, {"text": "answer one"}],
        },
        *RULES,
    ]
    turns = (await converse(workspace(tmp_path, scripted(rules)), helper(), CASE)).turns
    helper_view = [m.role for m in turns[3].history]
    assert helper_view == ["user", "assistant", "tool", "assistant"]  # its own failed tool call and result
    assert texts(turns[2].history) == [("user", CASE.input), ("assistant", "question one")]
    assert turns[2].input == "answer one"  # the asker only ever sees the reply


# --- how it ends -------------------------------------------------------------------------------------


async def test_until_is_checked_after_every_turn_of_either_side(tmp_path: Path) -> None:
    on_helper = helper(until=lambda run: run.output == "answer two")
    conversation = await converse(workspace(tmp_path), on_helper, CASE)
    assert (len(conversation.turns), conversation.ended) == (4, "until")
    assert conversation.graded_run is conversation.turns[3]


async def test_the_machine_always_answers_the_opening(tmp_path: Path) -> None:
    conversation = await converse(workspace(tmp_path), helper(until=lambda run: True), CASE)
    assert [t.machine for t in conversation.turns] == ["asker", "helper"]
    assert conversation.ended == "until"


@pytest.mark.parametrize(("max_turns", "graded"), [(2, 1), (3, 1), (4, 3)])
async def test_max_turns_counts_both_sides(tmp_path: Path, max_turns: int, graded: int) -> None:
    conversation = await converse(workspace(tmp_path), helper(until=None, max_turns=max_turns), CASE)
    assert len(conversation.turns) == max_turns
    assert conversation.ended == "max_turns"
    assert conversation.graded_run is conversation.turns[graded]


async def test_without_until_it_runs_to_max_turns(tmp_path: Path) -> None:
    rules = [*RULES[:4], {"match": "^answer two", "turns": [{"text": "question one"}]}]
    conversation = await converse(workspace(tmp_path, scripted(rules)), helper(until=None, max_turns=7), CASE)
    assert [t.output for t in conversation.turns][-2:] == ["answer one", "question two"]
    assert len(conversation.turns) == 7


async def test_an_until_that_raises_names_the_machine(tmp_path: Path) -> None:
    def broken(run: Run) -> bool:
        raise KeyError("oops")

    with pytest.raises(DefinitionError, match=r"machine 'helper': its counterpart's until raised KeyError"):
        await converse(workspace(tmp_path), helper(until=broken), CASE)


# --- storing and grading -----------------------------------------------------------------------------


async def test_every_turn_is_stored_with_the_conversation_case_and_trial(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = await converse(ws, helper(), CASE, trial=2)
    runs = stored(ws, conversation.conversation_id)
    assert [r.id for r in runs] == [t.id for t in conversation.turns]
    assert {(r.case_id, r.trial) for r in runs} == {("first", 2)}
    assert len({t.conversation_id for t in conversation.turns}) == 1
    other = await converse(ws, helper(), CASE)
    assert other.conversation_id != conversation.conversation_id


async def test_only_the_machines_last_turn_is_graded(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = await converse(ws, helper(), CASE, grade=True, pass_score=0.5)
    graded = conversation.graded_run
    assert graded is not None and graded.scorecard is not None
    assert (graded.score, graded.scorecard.pass_score, graded.case_id) == (1.0, 0.5, "first")
    assert conversation.counterpart_graded_run is None
    by_id = {r.id: r for r in stored(ws, conversation.conversation_id)}
    assert [by_id[t.id].scorecard is not None for t in conversation.turns] == [
        False,
        False,
        False,
        True,
        False,
    ]


async def test_grading_the_counterpart_grades_its_last_turn_with_its_own_rubric(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = await converse(ws, helper(), CASE, grade=True, grade_counterpart=True)
    theirs = conversation.counterpart_graded_run
    assert theirs is conversation.turns[4]
    assert theirs.scorecard is not None and list(theirs.scorecard.criteria) == ["polite"]
    by_id = {r.id: r for r in stored(ws, conversation.conversation_id)}
    assert [by_id[t.id].scorecard is not None for t in conversation.turns] == [
        False,
        False,
        False,
        True,
        True,
    ]


async def test_nothing_is_stored_when_the_caller_stores(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = await converse(ws, helper(), CASE, grade=True, store=False)
    assert stored(ws, conversation.conversation_id) == []
    assert conversation.turns[3].scorecard is not None  # graded in place for the caller to write


async def test_model_changes_only_the_machines_model(tmp_path: Path) -> None:
    conversation = await converse(workspace(tmp_path), helper(), CASE, model="swapped")
    assert [(t.machine, t.model) for t in conversation.turns] == [
        ("asker", "asker-model"),
        ("helper", "swapped"),
        ("asker", "asker-model"),
        ("helper", "swapped"),
        ("asker", "asker-model"),
    ]


async def test_each_turn_is_reported_as_soon_as_it_finishes(tmp_path: Path) -> None:
    seen: list[str] = []
    inner = scripted()

    class Logging:
        name = "scripted"

        async def run(self, request: HarnessRequest) -> HarnessResult:
            seen.append(f"start {request.machine}")
            return await inner.run(request)

    await converse(
        workspace(tmp_path, Logging()), helper(), CASE, on_turn=lambda run: seen.append(f"done {run.machine}")
    )
    assert seen[:4] == ["start asker", "done asker", "start helper", "done helper"]
    assert len(seen) == 10


async def test_a_plain_text_starting_point_has_no_case(tmp_path: Path) -> None:
    conversation = await converse(workspace(tmp_path), helper(), "scenario: no case file")
    assert conversation.case_id is None
    assert {t.case_id for t in conversation.turns} == {None}
    assert conversation.ended == "until"


async def test_a_machine_without_a_counterpart_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"machine 'asker' has no counterpart.*counterpart=Counterpart\("):
        await converse(workspace(tmp_path), asker(), CASE)


async def test_a_child_inherits_its_parents_counterpart(tmp_path: Path) -> None:
    child = define_child(helper(), name="helper/terse", intent="Answer tersely.")
    conversation = await converse(workspace(tmp_path), child, CASE)
    assert [t.machine for t in conversation.turns] == [
        "asker",
        "helper/terse",
        "asker",
        "helper/terse",
        "asker",
    ]


# --- failures and budgets ----------------------------------------------------------------------------


async def test_a_failed_turn_ends_the_conversation_ungraded(tmp_path: Path) -> None:
    ws = workspace(tmp_path, scripted(RULES[:2]))  # nothing answers "answer one"
    conversation = await converse(ws, helper(), CASE, grade=True)
    assert [t.status for t in conversation.turns] == ["ok", "ok", "error"]
    assert conversation.ended == "error"
    assert conversation.failed is conversation.turns[2]
    assert conversation.graded_run is None
    assert conversation.result is conversation.failed
    assert "no rule" in (conversation.failed.error or "")
    assert [r.status for r in stored(ws, conversation.conversation_id)] == ["ok", "ok", "error"]
    assert all(t.scorecard is None for t in conversation.turns)


# Every turn uses 100,000 input tokens of a priced model: $0.186 a turn.
COSTLY = [
    {"match": rule["match"], "turns": [{**rule["turns"][0], "usage": {"input_tokens": 100_000}}]}
    for rule in RULES
]
PRICED = "Qwen/Qwen3.8-27B"


async def test_a_budget_spent_mid_conversation_stops_it_and_keeps_its_turns(tmp_path: Path) -> None:
    ws = workspace(tmp_path, scripted(COSTLY), Budget(0.3))
    machine = helper(model=PRICED, other=asker(PRICED))
    conversation = await converse(ws, machine, CASE, grade=True)
    assert (len(conversation.turns), conversation.ended) == (2, "budget")
    assert conversation.stopped is not None and "budget" in conversation.stopped
    assert conversation.graded_run is None and conversation.result is None
    assert len(stored(ws, conversation.conversation_id)) == 2
    with pytest.raises(BudgetExceeded):  # refused before the first turn: nothing happens at all
        await converse(ws, machine, CASE)


async def test_an_unknown_price_on_either_side_is_refused_before_any_turn(tmp_path: Path) -> None:
    calls: list[str] = []

    class Paid:
        name = "paid"

        async def run(self, request: HarnessRequest) -> HarnessResult:
            calls.append(request.machine)
            raise AssertionError("no turn may start")

    ws = workspace(tmp_path, Paid(), Budget(1))
    with pytest.raises(UnknownPriceError, match="mystery"):
        await converse(ws, helper(model=PRICED, other=asker("mystery-model")), CASE)
    with pytest.raises(UnknownPriceError, match="mystery"):
        await converse(ws, helper(model=PRICED, other=asker(PRICED)), CASE, model="mystery-tune")
    assert calls == []


# --- suites of conversations ------------------------------------------------------------------------

CASES = [CASE, Case(id="second", input="scenario: the same again")]


async def test_a_suite_tallies_conversations_and_stores_every_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "WRITE_BATCH", 3)
    ws = workspace(tmp_path)
    tallied: list[Run] = []
    report = await run_suite(ws, helper(), CASES, trials=2, concurrency=2, on_run=tallied.append)
    assert report.runs == 4
    assert [(c.case_id, c.trials, c.scores, c.passes) for c in report.cases] == [
        ("first", 2, [1.0, 1.0], 2),
        ("second", 2, [1.0, 1.0], 2),
    ]
    assert report.model_dump(mode="json", by_alias=True)["summary"]["errors"] == 0
    assert {(r.machine, r.output) for r in tallied} == {("helper", "answer two")}
    everything = list(ws.store.iter_runs())
    assert len(everything) == 4 * 5
    assert len({r.conversation_id for r in everything}) == 4
    graded = [r for r in everything if r.scorecard is not None]
    assert sorted((r.case_id, r.trial) for r in graded) == [
        ("first", 0),
        ("first", 1),
        ("second", 0),
        ("second", 1),
    ]
    assert {r.id for r in graded} == {r.id for r in tallied}


async def test_a_suite_counts_a_failed_conversation_as_a_failed_run(tmp_path: Path) -> None:
    failing = [
        {"match": "^scenario: the same", "turns": [{"text": "question three"}]},  # which nothing answers
        *RULES,
    ]
    ws = workspace(tmp_path, scripted(failing))
    tallied: list[Run] = []
    report = await run_suite(ws, helper(), CASES, on_run=tallied.append)
    first, second = report.cases
    assert (first.trials, first.scores, first.errors) == (1, [1.0], 0)
    assert (second.trials, second.scores, second.errors) == (1, [], 1)
    assert report.errors == 1
    failed = [r for r in tallied if r.status == "error"]
    assert len(failed) == 1 and failed[0].machine == "helper" and failed[0].case_id == "second"
    assert [r.status for r in ws.store.iter_runs() if r.case_id == "second"] == ["ok", "error"]


async def test_a_suite_stops_when_the_budget_runs_out_mid_conversation(tmp_path: Path) -> None:
    ws = workspace(tmp_path, scripted(COSTLY), Budget(0.5))
    report = await run_suite(ws, helper(model=PRICED, other=asker(PRICED)), CASES, concurrency=1)
    assert report.stopped is not None and "budget" in report.stopped
    assert report.runs == 0  # the one conversation it began did not finish, so nothing is tallied
    assert len(list(ws.store.iter_runs())) == 3  # but its turns were paid for and are kept


# --- defining a counterpart --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counterpart", "message"),
    [
        ({"machine": None}, r"machine 'helper': counterpart must be a Counterpart\(.*got dict"),
        (
            Counterpart(machine="asker"),
            r"machine 'helper': its counterpart's machine must be a Machine.*got str",
        ),
        (Counterpart(machine=asker(), max_turns=1), r"max_turns must be an integer of at least 2.*got 1"),
        (Counterpart(machine=asker(), max_turns=0), r"max_turns .* got 0"),
        (Counterpart(machine=asker(), max_turns=True), r"max_turns .* got True"),
        (Counterpart(machine=asker(), max_turns="4"), r"max_turns .* got '4'"),
        (Counterpart(machine=asker(), until="done"), r"its counterpart's until must be a function"),
    ],
)
def test_a_bad_counterpart_is_refused_naming_the_machine(counterpart: Any, message: str) -> None:
    rubric = define_rubric({"answers": "Replies."})
    with pytest.raises(DefinitionError, match=message):
        define_machine(
            name="helper",
            intent="Answer.",
            instructions="Answer.",
            model="echo",
            rubric=rubric,
            evaluator=define_evaluator(rubric, {"answers": check("any", lambda run: True)}),
            counterpart=counterpart,
        )


def test_a_machine_cannot_be_its_own_counterpart() -> None:
    with pytest.raises(DefinitionError, match="'asker' cannot be its own counterpart"):
        define_machine(
            name="asker",
            intent="Ask.",
            instructions="Ask.",
            model="echo",
            rubric=asker().rubric,
            evaluator=asker().evaluator,
            counterpart=Counterpart(machine=asker()),
        )


def test_counterpart_defaults() -> None:
    side = Counterpart(machine=asker())
    assert (side.until, side.max_turns) == (None, 8)
    defined = helper().counterpart
    assert defined is not None and defined.max_turns == 8 and defined.until is asker_is_done
