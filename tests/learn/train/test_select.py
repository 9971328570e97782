"""Selection: which stored runs are learned from (held-out cases never, by id or by input; only the live
model's own runs when asked, never a replay), each filter counted; and ``example_of``, whose targets are
the run's assistant steps except those whose tool calls all failed."""

from __future__ import annotations

import pytest
from helpers.learn_runs import HOLDOUT, graded

from machine import Workspace
from machine.learn import Selection
from machine.learn.train import Funnel, example_of, failed_steps, rows_of
from machine.measure import run_suite
from machine.runs import Message, Run, Tag, ToolCall
from machine.spec import Case

LIVE = "Qwen/Qwen3.8-27B"


def selected(ws: Workspace, selection: Selection, funnel: Funnel | None = None) -> list[Run]:
    return list(selection.select(ws.store.iter_runs("calc"), funnel or Funnel()))


def fingerprint(ws: Workspace) -> str:
    return ws.load("calc").rubric.fingerprint


def test_a_held_out_case_is_never_selected_even_under_another_id(ws: Workspace) -> None:
    held = [Case.model_validate(c) for c in HOLDOUT]
    kept = graded(ws, "sum", 1.0)
    same_id = graded(ws, "held", 1.0)
    same_input = graded(ws, "held", 1.0).model_copy(update={"case_id": "copied"})  # "add 10 and 20"
    marked = graded(ws, "held", 0.0, tags=[Tag(kind="good")])  # not even a person's mark lets it in
    ws.store.put_many([kept, same_id, same_input, marked])
    funnel = Funnel()
    assert [r.id for r in selected(ws, Selection(fingerprint(ws), held_out=held), funnel)] == [kept.id]
    assert ("runs of cases not held out", 1, "run cases that are not in holdout.json") in funnel.steps


def test_a_held_out_id_is_kept_out_whatever_its_run_says_as_input(ws: Workspace) -> None:
    """A run recorded under a held-out case's id is that case (its input since edited, say): the id check
    alone keeps it out, so a selection that dropped it would fail here."""
    held = [Case.model_validate(c) for c in HOLDOUT]
    edited = graded(ws, "held", 1.0).model_copy(update={"input": "add 11 and 19"})
    kept = graded(ws, "sum", 1.0)
    ws.store.put_many([edited, kept])
    assert [r.id for r in selected(ws, Selection(fingerprint(ws), held_out=held))] == [kept.id]


@pytest.mark.parametrize(
    ("text", "held_out"),
    [
        ("Add 10 and 20", True),  # case
        ("  add   10 and 20!  ", True),  # spacing and punctuation
        ("add 10, and 20.", True),  # punctuation between the words
        ("ad 10 and 20", False),  # a short word changed is another question
        ("add 10 and 21", False),  # another number is another question
        ("subtract 10 and 20", False),
    ],
)
def test_a_held_out_input_is_kept_out_however_it_is_written(ws: Workspace, text: str, held_out: bool) -> None:
    held = [Case.model_validate(c) for c in HOLDOUT]
    run = graded(ws, "sum", 1.0).model_copy(update={"input": text, "case_id": "other"})
    ws.store.put_many([run])
    chosen = [r.id for r in selected(ws, Selection(fingerprint(ws), held_out=held))]
    assert chosen == ([] if held_out else [run.id])


def test_a_near_duplicate_of_a_held_out_input_is_kept_out(ws: Workspace) -> None:
    held = [Case(id="sky", input="What colour is the sky on a clear summer day?")]
    alike = {
        "spelling": "what color is the sky on a clear summer day",
        "a word more": "What colour is the sky on a clear summer day, please?",
    }
    other = {"another question": "What colour is the sea on a clear summer day?"}
    runs = {
        why: graded(ws, "sum", 1.0).model_copy(update={"input": text, "case_id": why})
        for why, text in {**alike, **other}.items()
    }
    ws.store.put_many(list(runs.values()))
    chosen = {r.case_id for r in selected(ws, Selection(fingerprint(ws), held_out=held))}
    assert chosen == set(other)


def fullwidth(text: str) -> str:
    """``text`` in fullwidth forms, as a paste from a CJK input method can give it."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def test_a_fullwidth_copy_of_a_held_out_input_is_kept_out(ws: Workspace) -> None:
    """The break: the guard folded case and spelling but not width, so a fullwidth copy of a held-out
    case was trained on."""
    held = [Case(id="sky", input="What colour is the sky on a clear summer day?")]
    alike = {
        "fullwidth": fullwidth("What colour is the sky on a clear summer day?"),
        "fullwidth, a word more": fullwidth("What colour is the sky on a clear summer day, please?"),
    }
    other = {"fullwidth, another question": fullwidth("What colour is the sea on a clear summer day?")}
    runs = [
        graded(ws, "sum", 1.0).model_copy(update={"input": text, "case_id": why})
        for why, text in {**alike, **other}.items()
    ]
    ws.store.put_many(runs)
    chosen = {r.case_id for r in selected(ws, Selection(fingerprint(ws), held_out=held))}
    assert chosen == set(other)


async def test_held_out_cases_stay_out_of_a_scripted_suites_runs(ws: Workspace) -> None:
    """The held-out input, sampled again as a training case of another id, is still held out."""
    cases = [
        *ws.cases("calc"),
        Case.model_validate({"id": "again", "input": HOLDOUT[0]["input"], "answer": 30}),
    ]
    await run_suite(ws, ws.load("calc"), cases)
    await run_suite(ws, ws.load("calc"), ws.cases("calc", "holdout.json"))
    held = ws.cases("calc", "holdout.json")
    everything = selected(ws, Selection(fingerprint(ws)))
    assert {r.case_id for r in everything} == {"sum", "half", "again", "held"}
    assert {r.case_id for r in selected(ws, Selection(fingerprint(ws), held_out=held))} == {"sum", "half"}


async def test_own_model_keeps_only_the_live_models_own_runs(ws: Workspace) -> None:
    await run_suite(ws, ws.load("calc"), ws.cases("calc"))  # scripted: the live model's id, replayed
    own = graded(ws, "sum", 1.0)
    replays = [graded(ws, "sum", 1.0, harness=name) for name in ("scripted", "echo")]
    other = graded(ws, "sum", 1.0, model="openrouter:other/model")
    ws.store.put_many([own, *replays, other])
    scripted = [r for r in ws.store.iter_runs("calc") if r.harness == "scripted" and r.model == LIVE]
    assert len(scripted) == 4  # three from the suite, one put
    assert len(selected(ws, Selection(fingerprint(ws)))) == 6  # "miss" scores 0
    funnel = Funnel()
    assert [r.id for r in selected(ws, Selection(fingerprint(ws), own_model=LIVE), funnel)] == [own.id]
    assert (f"runs {LIVE} produced itself", 1) in [(w, n) for w, n, _ in funnel.steps]


def test_own_model_empty_says_how_to_widen(ws: Workspace) -> None:
    ws.store.put(graded(ws, "sum", 1.0, harness="scripted"))
    funnel = Funnel()
    assert selected(ws, Selection(fingerprint(ws), own_model=LIVE), funnel) == []
    message = str(funnel.empty_error("calc"))
    assert f"only runs {LIVE} produced itself are kept (1 were before that filter)" in message
    assert "pass samples=4 to sample the model first or pass any_model=True" in message


def test_the_funnel_counts_each_filter_in_order(ws: Workspace) -> None:
    fp = fingerprint(ws)
    ws.store.put_many(
        [
            graded(ws, "sum", 1.0).model_copy(update={"status": "error"}),
            graded(ws, "sum", 1.0, fingerprint="an-older-rubric"),
            graded(ws, "held", 1.0),
            graded(ws, "sum", 1.0, harness="echo"),
            graded(ws, "sum", 0.5),
            graded(ws, "half", 1.0),
        ]
    )
    funnel = Funnel()
    selection = Selection(fp, held_out=[Case.model_validate(HOLDOUT[0])], own_model=LIVE)
    assert [r.case_id for r in selected(ws, selection, funnel)] == ["half"]
    assert funnel.stored == 6
    assert [(what, left) for what, left, _ in funnel.steps] == [
        ("runs that finished", 5),
        ("runs scoring at least 1", 4),
        ("runs graded under the current rubric", 3),
        ("runs of cases not held out", 2),
        (f"runs {LIVE} produced itself", 1),
    ]


def test_min_score_and_an_unscored_run(ws: Workspace) -> None:
    unscored = graded(ws, "sum", 1.0)
    assert unscored.scorecard is not None
    card = unscored.scorecard
    blank = {"right": card.criteria["right"].model_copy(update={"score": None, "reason": "no verdict"})}
    unscored = unscored.model_copy(update={"scorecard": card.model_copy(update={"criteria": blank})})
    ws.store.put_many([unscored, graded(ws, "half", 0.7)])
    assert selected(ws, Selection(fingerprint(ws), min_score=1.0)) == []
    assert [r.case_id for r in selected(ws, Selection(fingerprint(ws), min_score=0.7))] == ["half"]


# example_of


async def test_example_targets_skip_steps_whose_tool_calls_all_failed(ws: Workspace) -> None:
    await run_suite(ws, ws.load("calc"), ws.cases("calc"))
    runs = {r.case_id: r for r in ws.store.iter_runs("calc")}
    half = runs["half"]
    assert failed_steps(half) == {1}  # the divide by zero
    example = example_of(half, ws.load("calc"))
    assert example is not None
    roles = [m["role"] for m in example.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert example.targets == [4, 6]
    row = rows_of(half, ws.load("calc"))[0]["messages"]
    assert row[2]["weight"] == 0  # the export marks the failed step as context, and the example reads it
    assert example.messages == [{k: v for k, v in m.items() if k != "weight"} for m in row]
    assert (example.run_id, example.case_id) == (half.id, "half")
    whole = example_of(runs["sum"], ws.load("calc"))
    assert whole is not None and whole.targets == [2, 4]


def calls_run(ws: Workspace, results: list[bool], *, final: bool = True, **fields: object) -> Run:
    """A run whose one tool step makes a call per entry of ``results`` (True: it failed)."""
    calls = [ToolCall(id=f"c{i}", name="add", arguments={"a": i, "b": 1}) for i in range(len(results))]
    trajectory = [
        Message(role="user", content="add 2 and 3"),
        Message(role="assistant", tool_calls=calls),
        *[
            Message(role="tool", content="no" if bad else "ok", tool_call_id=f"c{i}", is_error=bad)
            for i, bad in enumerate(results)
        ],
    ]
    if final:
        trajectory.append(Message(role="assistant", content="5"))
    return graded(ws, "sum", 1.0).model_copy(update={"trajectory": trajectory, **fields})


def test_a_step_with_one_good_call_of_two_is_a_target(ws: Workspace) -> None:
    example = example_of(calls_run(ws, [True, False]), ws.load("calc"))
    assert example is not None and example.targets == [2, 5]
    example = example_of(calls_run(ws, [True, True]), ws.load("calc"))
    assert example is not None and example.targets == [5]


def test_a_run_with_no_target_left_gives_none(ws: Workspace) -> None:
    assert example_of(calls_run(ws, [True], final=False), ws.load("calc")) is None


def test_history_is_context_never_a_target(ws: Workspace) -> None:
    history = [Message(role="user", content="hello"), Message(role="assistant", content="hi")]
    run = calls_run(ws, [False], history=history)
    example = example_of(run, ws.load("calc"))
    assert example is not None
    assert [m["role"] for m in example.messages[:4]] == ["system", "user", "assistant", "user"]
    assert example.targets == [4, 6]


def test_the_answer_a_person_gave_is_always_a_target(ws: Workspace) -> None:
    """A run that stopped on a failed call, given its answer with ``/good --as``: the answer is learned."""
    run = calls_run(ws, [True], final=False, tags=[Tag(kind="good", answer="It is 5.")])
    example = example_of(run, ws.load("calc"))
    assert example is not None
    assert [m["role"] for m in example.messages] == ["system", "user", "assistant"]
    assert example.messages[-1]["content"] == "It is 5." and "tool_calls" not in example.messages[-1]
    assert example.targets == [2]


def test_an_answer_to_a_run_that_never_replied_is_added_after_its_history(ws: Workspace) -> None:
    history = [Message(role="user", content="hello"), Message(role="assistant", content="hi")]
    run = graded(ws, "sum", 0.0, tags=[Tag(kind="good", answer="5")])
    run = run.model_copy(update={"history": history, "trajectory": run.trajectory[:1]})
    [row] = rows_of(run, ws.load("calc"))
    assert [(m["role"], m["content"]) for m in row["messages"][1:]] == [
        ("user", "hello"),
        ("assistant", "hi"),  # the history's reply stays as it was
        ("user", "add 2 and 3"),
        ("assistant", "5"),
    ]
    example = example_of(run, ws.load("calc"))
    assert example is not None and example.targets == [4]
