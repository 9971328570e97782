"""Jev graders, tested at their boundary: the request they build and how answers and errors map.

No machine here reaches TypeSafe. Two stand-ins take its place: a client object that records the
request and answers with the SDK's own answer types (or raises its own error classes), and a local
HTTP server speaking TypeSafe's System One protocol to the real SDK client, failures included.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import anyio
import httpx2
import pytest
from helpers.quiet_server import QuietServer
from typesafe_sdk import (
    AsyncTypeSafeClient,
    Choice,
    ChoiceAnswer,
    Noul,
    NoulAnswer,
    RetryPolicy,
    Score,
    ScoreAnswer,
    SystemOneResponse,
    TypeSafeAPIConnectionError,
    TypeSafeAPIResponseValidationError,
    TypeSafeAPITimeoutError,
    TypeSafeAuthenticationError,
    TypeSafeBadRequestError,
    TypeSafeError,
    TypeSafeInternalServerError,
    TypeSafeNotFoundError,
    TypeSafePermissionDeniedError,
    TypeSafeRateLimitError,
    TypeSafeUnprocessableEntityError,
    Usage,
)

import machine
from machine import (
    Budget,
    Criterion,
    DefinitionError,
    GradeContext,
    Message,
    Run,
    ToolCall,
    check,
    define_evaluator,
    define_rubric,
    jev,
)
from machine.grade import _jev, _jev_answers  # the request's state and the SDK import, tested on purpose

LONG_RESULT = "line of a long file\n" * 2000  # 40,000 characters: sent whole, never cut


def make_run(output: str = "Bonjour, voici le fichier.") -> Run:
    return Run(
        machine="m",
        model="echo",
        harness="echo",
        input="Read notes.txt and greet me in French.",
        output=output,
        trajectory=[
            Message(role="user", content="Read notes.txt and greet me in French."),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id="c1", name="read_file", arguments={"path": "notes.txt"})],
            ),
            Message(role="tool", tool_call_id="c1", name="read_file", content=LONG_RESULT),
            Message(role="assistant", tool_calls=[ToolCall(id="c2", name="run", raw_arguments="{bad json")]),
            Message(
                role="tool", tool_call_id="c2", name="run", content="arguments did not parse", is_error=True
            ),
            Message(role="assistant", content=output),
        ],
    )


def response(answers: dict[str, Any], model: str = "jev-test-1") -> SystemOneResponse:
    return SystemOneResponse(model=model, usage=Usage(input_tokens=321, output_tokens=7), answers=answers)


class StandIn:
    """Takes the place of AsyncTypeSafeClient: records each request, answers or raises."""

    def __init__(self, answers: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.answers = answers or {}
        self.error = error
        self.requests: list[dict[str, Any]] = []

    async def system_one(self, state: Any, questions: Any, *, model: str | None = None) -> Any:
        self.requests.append({"state": state, "questions": dict(questions), "model": model})
        await anyio.sleep(0)
        if self.error is not None:
            raise self.error
        return response(self.answers)


def noul(p: float) -> NoulAnswer:
    return NoulAnswer(noul=p)


def score_answer(expected: float, probabilities: dict[int, float], levels: list[str]) -> ScoreAnswer:
    return ScoreAnswer(
        score=expected,
        confidence=max(probabilities.values()),
        legend=dict(enumerate(levels)),
        probabilities=probabilities,
    )


TONE = ["rude", "neutral", "warm"]


def evaluator_mixing_graders() -> machine.Evaluator:
    rubric = define_rubric(
        {
            "in_french": Criterion("Is the reply written in French?", 2.0),
            "tone": Criterion("How warm is the reply's tone?", 1.0),
            "length": Criterion("How long is the reply?", 1.0),
            "short": Criterion("At most 20 words.", 1.0),
        }
    )
    j = jev()
    return define_evaluator(
        rubric,
        {
            "in_french": j.noul(),
            "tone": j.score(TONE),
            "length": j.choice({"short": {"score": 1}, "long": {"score": 0, "description": "Over 50 words"}}),
            "short": check("words", lambda run: len(run.output.split()) <= 20),
        },
    )


ALL_ANSWERS: dict[str, Any] = {
    "in_french": noul(0.92),
    "tone": score_answer(1.5, {0: 0.1, 1: 0.3, 2: 0.6}, TONE),
    "length": ChoiceAnswer(choice="short", confidence=0.8, probabilities={"short": 0.8, "long": 0.2}),
}


# --- the request ---------------------------------------------------------------------------------


async def test_one_request_carries_every_jev_criterion_of_the_run() -> None:
    client = StandIn(ALL_ANSWERS)
    card = await evaluator_mixing_graders().grade(make_run(), GradeContext(jev_client=client))

    assert len(client.requests) == 1
    questions = client.requests[0]["questions"]
    assert list(questions) == ["in_french", "tone", "length"]  # the check is not a question
    assert isinstance(questions["in_french"], Noul)
    assert questions["in_french"].instructions == "Is the reply written in French?"
    assert isinstance(questions["tone"], Score)
    assert questions["tone"].instructions == "How warm is the reply's tone?"
    assert list(questions["tone"].criteria) == TONE
    assert isinstance(questions["length"], Choice)
    assert questions["length"].instructions == "How long is the reply?"
    assert dict(questions["length"].criteria) == {"short": None, "long": "Over 50 words"}
    assert client.requests[0]["model"] is None  # the SDK's default model
    assert card.unscored == []
    assert card.criteria["short"].grader == "check:words"
    assert {
        c.details["request_criteria"] == ["in_french", "tone", "length"]
        for n, c in card.criteria.items()
        if n != "short"
    } == {True}


async def test_the_state_holds_input_output_and_whole_tool_results() -> None:
    client = StandIn(ALL_ANSWERS)
    run = make_run()
    await evaluator_mixing_graders().grade(run, GradeContext(jev_client=client))

    state = client.requests[0]["state"]
    assert state["input"] == run.input
    assert state["output"] == run.output
    assert state["tool_calls"] == [
        {"tool": "read_file", "arguments": {"path": "notes.txt"}, "result": LONG_RESULT, "is_error": False},
        {"tool": "run", "arguments": "{bad json", "result": "arguments did not parse", "is_error": True},
    ]
    assert list(state) == ["input", "tool_calls", "output"]
    json.dumps(state)  # plain JSON: what the SDK sends as the request's state


def test_the_state_of_a_conversation_keeps_its_earlier_turns() -> None:
    run = make_run().model_copy(
        update={"history": [Message(role="user", content="hi"), Message(role="assistant", content="salut")]}
    )
    state = _jev.run_state(run)
    assert state["conversation_before"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "salut"},
    ]
    assert next(iter(state)) == "conversation_before"


async def test_graders_of_two_jev_objects_in_one_evaluator_still_share_one_request() -> None:
    rubric = define_rubric({"a": "Is it polite?", "b": "How warm is it?", "c": "Exactly one line."})
    evaluator = define_evaluator(
        rubric,
        {"a": jev().noul(), "b": jev().score(TONE), "c": check("one_line", lambda r: "\n" not in r.output)},
    )
    client = StandIn({"a": noul(0.9), "b": score_answer(2.0, {2: 1.0}, TONE)})
    with anyio.fail_after(5):
        card = await evaluator.grade(make_run(), GradeContext(jev_client=client))
    assert len(client.requests) == 1
    assert set(client.requests[0]["questions"]) == {"a", "b"}
    assert (card.criteria["a"].score, card.criteria["b"].score, card.criteria["c"].score) == (0.9, 1.0, 1.0)


async def test_each_run_gets_its_own_request() -> None:
    evaluator = evaluator_mixing_graders()
    client = StandIn(ALL_ANSWERS)
    ctx = GradeContext(jev_client=client)
    runs = [make_run("Bonjour"), make_run("Salut")]
    async with anyio.create_task_group() as group:
        for run in runs:
            group.start_soon(evaluator.grade, run, ctx)
    assert len(client.requests) == 2
    assert sorted(r["state"]["output"] for r in client.requests) == ["Bonjour", "Salut"]


async def test_a_grader_made_but_not_used_changes_nothing() -> None:
    j = jev()
    j.noul()  # made, never given a criterion
    evaluator = define_evaluator(define_rubric({"a": "Is it polite?"}), {"a": j.noul()})
    client = StandIn({"a": noul(0.8)})
    with anyio.fail_after(5):
        card = await evaluator.grade(make_run(), GradeContext(jev_client=client))
    assert card.criteria["a"].score == 0.8
    assert len(client.requests) == 1
    assert set(client.requests[0]["questions"]) == {"a"}


async def test_different_jev_models_make_separate_requests() -> None:
    rubric = define_rubric({"a": "Is it polite?", "b": "Is it short?"})
    evaluator = define_evaluator(rubric, {"a": jev().noul(), "b": jev(model="jev-other").noul()})
    client = StandIn({"a": noul(0.9), "b": noul(0.1)})
    await evaluator.grade(make_run(), GradeContext(jev_client=client))
    assert sorted(r["model"] or "" for r in client.requests) == ["", "jev-other"]


async def test_a_synchronous_client_is_called_off_the_event_loop() -> None:
    seen: list[str] = []

    class SyncStandIn:
        def system_one(self, state: Any, questions: Any, *, model: str | None = None) -> SystemOneResponse:
            seen.append(threading.current_thread().name)
            return response({"a": noul(1.0)})

    evaluator = define_evaluator(define_rubric({"a": "Is it polite?"}), {"a": jev(model="jev-small").noul()})
    card = await evaluator.grade(make_run(), GradeContext(jev_client=SyncStandIn()))
    assert card.criteria["a"].score == 1.0
    assert seen and seen[0] != threading.main_thread().name


# --- answers to scores ---------------------------------------------------------------------------


async def test_answers_map_to_scores_with_the_probability_kept() -> None:
    card = await evaluator_mixing_graders().grade(make_run(), GradeContext(jev_client=StandIn(ALL_ANSWERS)))

    french = card.criteria["in_french"]
    assert (french.score, french.grader, french.weight) == (0.92, "jev:noul", 2.0)
    assert french.details["probability"] == 0.92
    assert french.details["answer"] == "yes"
    assert french.details["unsure"] is False
    assert french.details["model"] == "jev-test-1"
    assert french.details["usage"] == {"input_tokens": 321, "output_tokens": 7}
    assert french.cost_usd == 0.0  # Jev reports tokens, not a price: nothing to charge

    tone = card.criteria["tone"]
    assert tone.score == pytest.approx(0.75)  # expected level 1.5 of 0..2
    assert tone.details["answer"] == "warm"
    assert tone.details["probabilities"] == pytest.approx({"rude": 0.1, "neutral": 0.3, "warm": 0.6})
    assert tone.details["probability"] == pytest.approx(0.9)  # neutral (0.5) and warm (1.0) pass
    assert tone.details["unsure"] is False

    length = card.criteria["length"]
    assert length.score == pytest.approx(0.8)  # 0.8 * 1 + 0.2 * 0
    assert length.details["answer"] == "short"
    assert length.details["probability"] == pytest.approx(0.8)

    assert card.criteria["short"].score == 1.0
    assert card.score == pytest.approx((2 * 0.92 + 0.75 + 0.8 + 1.0) / 5)
    json.loads(card.model_dump_json())  # the scorecard stays plain data for the store


async def test_a_choice_scores_the_probability_weighted_mean_of_its_options() -> None:
    grader = jev().choice({"great": {"score": 1}, "fine": {"score": 0.5}, "bad": {"score": 0.0}})
    answer = ChoiceAnswer(
        choice="fine", confidence=0.5, probabilities={"great": 0.2, "fine": 0.5, "bad": 0.3}
    )
    result = await grader.grade(
        make_run(), "q", Criterion("How good?"), GradeContext(jev_client=StandIn({"q": answer}))
    )
    assert result.score == pytest.approx(0.2 + 0.25)
    assert result.details["probability"] == pytest.approx(0.7)  # great and fine score at least 0.5
    assert result.details["unsure"] is True


@pytest.mark.parametrize(
    ("p", "unsure"),
    [(0.0, False), (0.2999, False), (0.3, True), (0.5, True), (0.7, True), (0.7001, False), (1.0, False)],
)
async def test_unsure_between_point_three_and_point_seven_inclusive(p: float, unsure: bool) -> None:
    result = (
        await jev()
        .noul()
        .grade(make_run(), "q", Criterion("Polite?"), GradeContext(jev_client=StandIn({"q": noul(p)})))
    )
    assert result.score == p  # the score is still the score
    assert result.details["unsure"] is unsure
    assert ("unsure" in result.reason) is unsure


async def test_a_split_score_is_unsure_and_a_confident_middle_is_not() -> None:
    split = score_answer(1.0, {0: 0.5, 2: 0.5}, TONE)
    middle = score_answer(1.0, {1: 1.0}, TONE)
    client = StandIn({"split": split, "middle": middle})
    rubric = define_rubric({"split": "Tone?", "middle": "Tone?"})
    j = jev()
    card = await define_evaluator(rubric, {"split": j.score(TONE), "middle": j.score(TONE)}).grade(
        make_run(), GradeContext(jev_client=client)
    )
    assert card.criteria["split"].score == card.criteria["middle"].score == 0.5
    assert card.criteria["split"].details["unsure"] is True
    assert card.criteria["middle"].details["unsure"] is False


# --- failures are UNSCORED, never 0 ----------------------------------------------------------------

HEADERS = httpx2.Headers({"retry-after": "3"})


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (TypeSafeRateLimitError(429, {"error": "slow down"}, HEADERS), ["rate limit", "429", "wait 3.0 s"]),
        (TypeSafeAPITimeoutError(10.0), ["timed out", "TypeSafeAPITimeoutError"]),
        (
            TypeSafeAuthenticationError(401, {"error": "bad key"}, httpx2.Headers()),
            ["API key", "TYPESAFE_API_KEY"],
        ),
        (TypeSafePermissionDeniedError(403, None, httpx2.Headers()), ["refused", "403"]),
        (
            TypeSafeAPIResponseValidationError(200, {}, httpx2.Headers(), "answers.tone.confidence"),
            ["malformed", "answers.tone.confidence"],
        ),
        (TypeSafeNotFoundError(404, {"error": "no model"}, httpx2.Headers()), ["model name", "404"]),
        (TypeSafeBadRequestError(400, {"error": "bad"}, httpx2.Headers()), ["invalid", "400"]),
        (TypeSafeUnprocessableEntityError(422, {"detail": "nope"}, httpx2.Headers()), ["invalid", "422"]),
        (TypeSafeInternalServerError(503, None, httpx2.Headers()), ["server error", "503"]),
        (TypeSafeAPIConnectionError("Connection error: refused"), ["could not reach TypeSafe"]),
        (TypeSafeError("At least one question is required."), ["At least one question"]),
        (RuntimeError("kaboom"), ["unexpected", "RuntimeError", "kaboom"]),
    ],
)
async def test_every_error_class_makes_every_jev_criterion_unscored(
    error: Exception, words: list[str]
) -> None:
    client = StandIn(error=error)
    card = await evaluator_mixing_graders().grade(make_run(), GradeContext(jev_client=client))
    assert len(client.requests) == 1
    assert sorted(card.unscored) == ["in_french", "length", "tone"]
    assert card.criteria["short"].score == 1.0  # the check still counts
    assert card.score == 1.0  # unscored is kept out of the total, not counted as 0
    for name in card.unscored:
        reason = card.criteria[name].reason
        for word in words:
            assert word in reason, (word, reason)


async def test_missing_key_says_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    result = await jev().noul().grade(make_run(), "q", Criterion("Polite?"), GradeContext())
    assert result.score is None
    assert "TYPESAFE_API_KEY is not set" in result.reason
    assert "set it" in result.reason


async def test_a_spent_budget_refuses_before_asking() -> None:
    budget = Budget(1.0)
    budget.spent_by_kind["runs"] = 1.0
    client = StandIn(ALL_ANSWERS)
    card = await evaluator_mixing_graders().grade(make_run(), GradeContext(budget=budget, jev_client=client))
    assert client.requests == []
    assert sorted(card.unscored) == ["in_french", "length", "tone"]
    assert all("budget spent" in card.criteria[n].reason for n in card.unscored)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (NoulAnswer(noul=1.5), ["malformed", "outside [0, 1]"]),
        (NoulAnswer(noul=float("nan")), ["malformed", "not a number"]),
        (score_answer(1.0, {0: 1.0}, ["a", "b"]), ["malformed", "NoulAnswer"]),
        (None, ["no answer to the question 'q'"]),
    ],
)
async def test_a_bad_or_missing_noul_answer_is_unscored(answer: Any, words: list[str]) -> None:
    answers = {} if answer is None else {"q": answer}
    answers["other"] = noul(0.5)
    result = (
        await jev()
        .noul()
        .grade(make_run(), "q", Criterion("Polite?"), GradeContext(jev_client=StandIn(answers)))
    )
    assert result.score is None
    for word in words:
        assert word in result.reason, (word, result.reason)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (score_answer(3.0, {2: 1.0}, TONE), ["expected level 3.0 is outside the levels 0..2"]),
        (score_answer(1.0, {5: 1.0}, TONE), ["probability to 5"]),
        (score_answer(1.0, {0: 0.0, 1: 0.0}, TONE), ["sum to 0"]),
    ],
)
async def test_a_bad_score_answer_is_unscored(answer: ScoreAnswer, words: list[str]) -> None:
    client = StandIn({"q": answer})
    result = (
        await jev().score(TONE).grade(make_run(), "q", Criterion("Tone?"), GradeContext(jev_client=client))
    )
    assert result.score is None
    for word in words:
        assert word in result.reason, (word, result.reason)


async def test_a_choice_outside_the_options_is_unscored() -> None:
    answer = ChoiceAnswer(choice="medium", confidence=0.9, probabilities={"medium": 0.9, "short": 0.1})
    grader = jev().choice({"short": {"score": 1}, "long": {"score": 0}})
    result = await grader.grade(
        make_run(), "q", Criterion("Length?"), GradeContext(jev_client=StandIn({"q": answer}))
    )
    assert result.score is None
    assert "'medium'" in result.reason


async def test_a_reply_without_answers_is_unscored() -> None:
    class Odd(StandIn):
        async def system_one(self, state: Any, questions: Any, *, model: str | None = None) -> Any:
            return {"answers": "none"}

    result = await jev().noul().grade(make_run(), "q", Criterion("Polite?"), GradeContext(jev_client=Odd()))
    assert result.score is None
    assert "malformed" in result.reason


# --- definitions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: jev().score("rude, warm"), "list of level"),
        (lambda: jev().score(["only"]), "at least two levels"),
        (lambda: jev().score(["a", "a"]), "listed twice"),
        (lambda: jev().score(["a", ""]), "non-empty string"),
        (lambda: jev().choice({"a": {"score": 1}}), "at least two options"),
        (lambda: jev().choice({"a": {"score": 2}, "b": {"score": 0}}), "number in [0, 1]"),
        (lambda: jev().choice({"a": {"score": True}, "b": {"score": 0}}), "number in [0, 1]"),
        (lambda: jev().choice({"a": 1, "b": {"score": 0}}), 'with a "score"'),  # type: ignore[dict-item]
        (lambda: jev().choice({"a": {"score": 1, "weight": 2}, "b": {"score": 0}}), "unknown key 'weight'"),
        (lambda: jev(model=""), "model"),
    ],
)
def test_bad_definitions_are_refused_with_a_message(make: Any, words: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        make()
    assert words in str(raised.value)


def test_jev_graders_satisfy_the_grader_protocol() -> None:
    j = jev()
    for grader in (j.noul(), j.score(TONE), j.choice({"a": {"score": 1}, "b": {"score": 0}})):
        assert isinstance(grader, machine.Grader)
        assert grader.kind == "jev"


# --- the real SDK client against a local server speaking System One ------------------------------


class _Server:
    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[dict[str, Any]] = []
        self.hang = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if outer.hang.is_set():
                    time.sleep(1)  # leave the client waiting past its timeout
                status, headers, payload = outer.replies.pop(0) if outer.replies else (500, {}, b"{}")
                self.send_response(status)
                for name, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.replies.append((status, headers or {}, payload))


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    thread = threading.Thread(target=s.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


WIRE_ANSWERS = {
    "model": "jev-2026-01",
    "usage": {"input_tokens": 900, "output_tokens": 3},
    "answers": {
        "in_french": {"type": "noul", "noul": 0.97},
        "tone": {
            "type": "score",
            "score": 2.0,
            "confidence": 0.95,
            "legend": {"0": "rude", "1": "neutral", "2": "warm"},
            "probabilities": {"0": 0.0, "1": 0.0, "2": 1.0},
        },
        "length": {
            "type": "choice",
            "choice": "long",
            "confidence": 0.6,
            "probabilities": {"short": 0.4, "long": 0.6},
        },
    },
}


async def test_the_client_built_from_the_environment_sends_one_system_one_request(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "ts-test-key")
    monkeypatch.setenv("TYPESAFE_BASE_URL", server.url)
    server.reply(200, WIRE_ANSWERS, {"x-typesafe-request-id": "req-1"})
    card = await evaluator_mixing_graders().grade(make_run(), GradeContext())

    assert len(server.requests) == 1
    sent = server.requests[0]
    assert sent["path"] == "/v1/systemone"
    assert sent["headers"]["Authorization"] == "Bearer ts-test-key"
    body = json.loads(sent["body"])
    assert body["model"] == "jev-latest"
    assert body["questions"] == {
        "in_french": {"type": "noul", "instructions": "Is the reply written in French?"},
        "tone": {"type": "score", "instructions": "How warm is the reply's tone?", "criteria": TONE},
        "length": {
            "type": "choice",
            "instructions": "How long is the reply?",
            "criteria": {"short": None, "long": "Over 50 words"},
        },
    }
    assert body["state"]["tool_calls"][0]["result"] == LONG_RESULT
    assert (card.criteria["in_french"].score, card.criteria["tone"].score) == (0.97, 1.0)
    assert card.criteria["length"].score == pytest.approx(0.4)
    assert card.criteria["length"].details["unsure"] is True
    assert card.criteria["tone"].details["model"] == "jev-2026-01"


async def test_wire_failures_from_the_real_client_are_unscored(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "ts-test-key")
    monkeypatch.setenv("TYPESAFE_BASE_URL", server.url)
    evaluator = evaluator_mixing_graders()
    cases: list[tuple[list[tuple[int, Any, dict[str, str]]], str]] = [
        ([(429, {"error": "too many"}, {"retry-after": "0"})] * 3, "rate limit"),
        ([(401, {"error": "invalid key"}, {})], "TYPESAFE_API_KEY"),
        ([(200, b"not json at all", {})], "malformed"),
        (
            [
                (
                    200,
                    {
                        "model": "m",
                        "usage": {"input_tokens": 1, "output_tokens": 0},
                        "answers": {"tone": {"type": "noul", "noul": 0.5}},
                    },
                    {},
                )
            ],
            "no answer to the question 'in_french'",
        ),
        ([(500, {"error": "down"}, {"retry-after": "0"})] * 3, "server error"),
    ]
    for replies, words in cases:
        server.requests.clear()
        for status, body, headers in replies:
            server.reply(status, body, headers)
        card = await evaluator.grade(make_run(), GradeContext())
        assert card.criteria["in_french"].score is None, words
        assert words in card.criteria["in_french"].reason, (words, card.criteria["in_french"].reason)
        assert card.criteria["short"].score == 1.0
        assert len(server.requests) == len(replies)  # the SDK's retries, then one verdict


async def test_a_timeout_from_the_real_client_is_unscored(server: _Server) -> None:
    server.hang.set()
    server.reply(200, WIRE_ANSWERS)
    client = AsyncTypeSafeClient(
        api_key="ts-test-key", base_url=server.url, timeout=0.2, retry=RetryPolicy(max_retries=0)
    )
    async with client:
        result = (
            await jev()
            .noul()
            .grade(make_run(), "in_french", Criterion("French?"), GradeContext(jev_client=client))
        )
    assert result.score is None
    assert "timed out" in result.reason


async def test_without_the_sdk_installed_the_criterion_is_unscored_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing() -> Any:
        raise ImportError("No module named 'typesafe_sdk'")

    monkeypatch.setattr(_jev_answers, "load_sdk", missing)
    monkeypatch.setattr(_jev, "load_sdk", missing)
    result = (
        await jev().noul().grade(make_run(), "q", Criterion("Polite?"), GradeContext(jev_client=StandIn()))
    )
    assert result.score is None
    assert "pip install 'machine[jev]'" in result.reason
