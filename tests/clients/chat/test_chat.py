"""The chat-completions harness against a local server that speaks the same protocol as Tinker and
OpenRouter: the real client code, only the base URL differs. Nothing leaves 127.0.0.1.

Every test is bounded: small timeouts, few attempts, waits recorded by a fake ``sleep`` instead of
slept, and each harness run inside ``anyio.fail_after``.
"""

from __future__ import annotations

import dataclasses
import email.utils
import gc
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.openai_server import (
    FakeOpenAI,
    Fault,
    Reply,
    ScriptedCall,
    hang,
    rate_limited,
    status,
    text,
    tool_call,
)

# tests/ holds no packages: the fake server is imported from its folder (benchmarks do the same).
from helpers.sleeps import Sleeps

from machine import (
    Budget,
    Event,
    HarnessRequest,
    HarnessResult,
    Tool,
    ToolContext,
    Usage,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    tool,
)
from machine.clients.chat import ChatClient, ChatCompletionsHarness, Endpoint, endpoint_for
from machine.runs import parse_effort

RUN_LIMIT_S = 10.0
INSTRUCTIONS = "You add numbers with the add tool."


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
def tinker(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Endpoint:
    """The tinker harness's endpoint, from the environment as users set it, at the local server."""
    monkeypatch.setenv("TINKER_API_KEY", "tk-secret-123")
    monkeypatch.setenv("TINKER_BASE_URL", server.url)
    monkeypatch.delenv("MACHINE_MODEL_TIMEOUT", raising=False)
    return endpoint_for("tinker")


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def local(server: FakeOpenAI, **kw: Any) -> Endpoint:
    options: dict[str, Any] = {"timeout_s": 2.0, "max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05}
    options.update(kw)
    return Endpoint(harness="openai", base_url=server.url + "/v1", **options)


def harness(
    endpoint: Endpoint, sleeps: Sleeps | None = None, *, stream: bool = True
) -> ChatCompletionsHarness:
    client = ChatClient(endpoint, sleep=sleeps or Sleeps(), jitter=lambda: 0.5)
    return ChatCompletionsHarness(endpoint, client=client, stream=stream)


def request(
    *,
    model: str = "fake-model",
    tools: list[Tool] | None = None,
    budget: Budget | None = None,
    events: list[Event] | None = None,
    **kw: Any,
) -> HarnessRequest:
    return HarnessRequest(
        run_id="r1",
        machine="calc",
        instructions=INSTRUCTIONS,
        input="add 2 and 3",
        model=model,
        tools=[add] if tools is None else tools,
        tool_context=ToolContext(run_id="r1"),
        budget=budget if budget is not None else Budget(None),
        on_event=events.append if events is not None else None,
        **kw,
    )


async def play(h: ChatCompletionsHarness, req: HarnessRequest) -> HarnessResult:
    """One bounded run; the client's connections are closed in this test's loop, not left to the GC."""
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            return await h.run(req)
    finally:
        await h.client.aclose()


# --- the agent loop -----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_tool_call_is_executed_and_its_result_fed_back(server: FakeOpenAI, stream: bool) -> None:
    server.push(
        tool_call("add", {"a": 2, "b": 3}, id="call_a", prompt_tokens=50, completion_tokens=10),
        text("The sum is 5.", prompt_tokens=80, cached_tokens=50, completion_tokens=6),
    )
    events: list[Event] = []
    result = await play(harness(local(server)), request(events=events if stream else None))

    assert (result.stop_reason, result.error, result.output) == ("end_turn", None, "The sum is 5.")
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant"]
    call = result.trajectory[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_a", "add", {"a": 2, "b": 3})
    answer = result.trajectory[2]
    assert (answer.content, answer.tool_call_id, answer.name, answer.is_error) == (
        "5",
        "call_a",
        "add",
        False,
    )
    assert result.usage == Usage(input_tokens=130, cached_input_tokens=50, output_tokens=16)

    first, second = server.requests
    assert first.path == "/v1/chat/completions" and first.stream is stream
    assert first.body["tools"] == [{"type": "function", "function": add.function()}]
    assert first.messages == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "add 2 and 3"},
    ]
    assert second.messages[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "5"},
    ]


async def test_max_steps_bounds_the_model_calls(server: FakeOpenAI) -> None:
    server.push(*(tool_call("add", {"a": i, "b": 1}) for i in range(3)))
    result = await play(harness(local(server)), request(max_steps=2))
    assert result.stop_reason == "max_steps"
    assert len(server.requests) == 2 and server.pending == 1
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant", "tool"]


async def test_several_tool_calls_in_one_streamed_reply_are_put_back_together(server: FakeOpenAI) -> None:
    calls = (ScriptedCall("add", {"a": 10, "b": 20}, "c1"), ScriptedCall("add", {"a": 1, "b": 2}, "c2"))
    server.push(Reply(tool_calls=calls, chunk_chars=2), text("30 and 3"))
    result = await play(harness(local(server)), request(events=[]))
    assert [(c.id, c.arguments) for c in result.trajectory[1].tool_calls] == [
        ("c1", {"a": 10, "b": 20}),
        ("c2", {"a": 1, "b": 2}),
    ]
    assert [(m.tool_call_id, m.content) for m in result.trajectory[2:4]] == [("c1", "30"), ("c2", "3")]


# --- remote harnesses: same client, only the base URL differs -----------------------------------


async def test_tinker_harness_talks_to_its_oai_path_with_the_key(
    server: FakeOpenAI, tinker: Endpoint
) -> None:
    endpoint = tinker
    assert endpoint.base_url == server.url + "/oai/api/v1" and endpoint.send_reasoning
    server.push(
        tool_call("add", {"a": 2, "b": 3}, reasoning="I should call add."),
        text("5", reasoning="Done."),
    )
    result = await play(harness(endpoint), request(model="tinker/Qwen/Qwen3.8-27B"))

    assert result.output == "5" and result.stop_reason == "end_turn"
    for seen in server.requests:
        assert seen.path == "/oai/api/v1/chat/completions"
        assert seen.headers["authorization"] == "Bearer tk-secret-123"
        assert seen.body["model"] == "Qwen/Qwen3.8-27B"  # the harness prefix is not sent
    # Tinker keeps reasoning in the prompt: the earlier step's reasoning goes back with it.
    assistant = server.requests[1].messages[2]
    assert assistant["role"] == "assistant" and assistant["reasoning_content"] == "I should call add."


async def test_openai_harness_does_not_send_reasoning_back(server: FakeOpenAI) -> None:
    server.push(tool_call("add", {"a": 2, "b": 3}, reasoning="I should call add."), text("5"))
    await play(harness(local(server)), request())
    assistant = server.requests[1].messages[2]
    assert assistant["role"] == "assistant" and "reasoning_content" not in assistant


async def test_openrouter_harness_with_a_free_model(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    monkeypatch.setenv("OPENROUTER_BASE_URL", server.url + "/api/v1")
    server.push(
        text("5", reasoning="2 + 3", reasoning_field="reasoning", prompt_tokens=900, completion_tokens=90)
    )
    budget = Budget(1.0)
    model = "openrouter/meta-llama/llama-3.3-70b-instruct:free"
    result = await play(harness(endpoint_for("openrouter")), request(model=model, budget=budget))

    (seen,) = server.requests
    assert seen.path == "/api/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-or-test"
    assert seen.body["model"] == "meta-llama/llama-3.3-70b-instruct:free"
    assert result.trajectory[-1].reasoning == "2 + 3"
    assert result.usage.input_tokens == 900
    assert result.cost_usd == 0.0 and budget.spent == 0.0


async def test_openai_harness_sends_openai_prefixed_ids_unchanged(server: FakeOpenAI) -> None:
    server.push(text("hi"))
    await play(harness(local(server)), request(model="openai/gpt-oss-20b"))
    assert server.requests[0].body["model"] == "openai/gpt-oss-20b"  # a real vLLM id, not a routing prefix


async def test_model_timeout_comes_from_the_environment(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "0.25")
    endpoint = dataclasses.replace(endpoint_for("openai"), max_attempts=1)
    assert endpoint.timeout_s == 0.25
    server.push(hang(2.0))
    started = time.perf_counter()
    result = await play(harness(endpoint), request())
    assert time.perf_counter() - started < 1.5
    assert result.stop_reason == "error" and "no reply within 0.25 s" in (result.error or "")


# --- reasoning, usage and cost ------------------------------------------------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_reasoning_is_captured_into_the_trajectory(
    server: FakeOpenAI, field: str, stream: bool
) -> None:
    server.reasoning_field = field
    server.push(
        tool_call("add", {"a": 2, "b": 3}, reasoning="The user wants a sum; add does that."),
        text("5", reasoning="add returned 5."),
    )
    result = await play(harness(local(server)), request(events=[] if stream else None))
    assert [m.reasoning for m in result.trajectory if m.role == "assistant"] == [
        "The user wants a sum; add does that.",
        "add returned 5.",
    ]


# prompt 1,000 tokens of which 400 cached, 200 output; prices per million (input, cached input, output)
FAMILIES = [
    # 600 x 1.86 + 400 x 0.372 + 200 x 5.595 = 1,116 + 148.8 + 1,119 = 2,383.8 per million
    ("Qwen/Qwen3.8-27B", 0.0023838),
    # 600 x 1.16 + 400 x 0.116 + 200 x 2.88 = 696 + 46.4 + 576 = 1,318.4 per million
    ("thinkingmachines/Inkling-Small", 0.0013184),
    # 600 x 0.54 + 400 x 0.108 + 200 x 1.335 = 324 + 43.2 + 267 = 634.2 per million
    ("Qwen/Qwen3.6-35B-A3B", 0.0006342),
]


@pytest.mark.parametrize(("model", "usd"), FAMILIES)
async def test_cost_is_tokens_times_the_table_rates_cached_input_included(
    server: FakeOpenAI, tinker: Endpoint, model: str, usd: float
) -> None:
    server.push(text("ok", prompt_tokens=1000, cached_tokens=400, completion_tokens=200))
    budget = Budget(1.0)
    result = await play(harness(tinker), request(model=f"tinker/{model}", budget=budget))
    assert result.usage == Usage(input_tokens=1000, cached_input_tokens=400, output_tokens=200)
    assert result.cost_usd == pytest.approx(usd, rel=1e-9)
    assert budget.spent == pytest.approx(usd, rel=1e-9)
    assert budget.spent_by_kind.keys() == {"runs"}


async def test_every_call_is_charged_as_it_finishes(server: FakeOpenAI) -> None:
    model = "Qwen/Qwen3.6-35B-A3B"
    server.push(
        tool_call("add", {"a": 2, "b": 3}, prompt_tokens=1000, completion_tokens=100),
        status(503),
        status(503),
    )
    budget = Budget(1.0)
    result = await play(harness(local(server, max_attempts=2)), request(model=model, budget=budget))
    # the first call was charged although the run then failed: 1,000 x 0.54 + 100 x 1.335 per million
    assert result.stop_reason == "error"
    assert budget.spent == pytest.approx(0.0006735) and result.cost_usd == pytest.approx(0.0006735)


# --- streaming ----------------------------------------------------------------------------------


async def test_streaming_emits_text_in_order_and_ends_with_the_same_message(server: FakeOpenAI) -> None:
    reply = text(
        "Hello, streaming world!", reasoning="say hello", chunk_chars=4, prompt_tokens=12, completion_tokens=5
    )
    server.push(reply, reply)
    h = harness(local(server))
    plain = await play(h, request(tools=[]))
    events: list[Event] = []
    streamed = await play(h, request(tools=[], events=events))

    assert not server.requests[0].stream
    assert server.requests[1].stream and server.requests[1].body["stream_options"] == {"include_usage": True}
    pieces = [e.message.content for e in events if e.type == "text"]
    assert pieces == ["Hell", "o, s", "trea", "ming", " wor", "ld!"]
    assert [e.type for e in events] == ["text"] * len(pieces) + ["assistant"]
    assert streamed.trajectory == plain.trajectory
    assert streamed.usage == plain.usage == Usage(input_tokens=12, output_tokens=5)
    assert streamed.output == "Hello, streaming world!"


async def test_streamed_tool_call_arguments_split_across_chunks(server: FakeOpenAI) -> None:
    server.push(tool_call("add", {"a": 123, "b": 456}, chunk_chars=1), text("579"))
    events: list[Event] = []
    result = await play(harness(local(server)), request(events=events))
    assert result.trajectory[1].tool_calls[0].arguments == {"a": 123, "b": 456}
    assert result.trajectory[2].content == "579"
    assert [e.type for e in events if e.type != "text"] == [
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
    ]


# --- resilience ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_429_waits_as_long_as_retry_after_says(
    server: FakeOpenAI, sleeps: Sleeps, stream: bool
) -> None:
    server.push(rate_limited(retry_after=7), text("ok"))
    endpoint = local(server, max_backoff_s=30.0)
    result = await play(harness(endpoint, sleeps), request(events=[] if stream else None))
    assert result.output == "ok" and result.error is None
    assert sleeps.waits == [7.0]
    assert result.retries == [{"attempt": 1, "error": "429 rate limited: Rate limit reached", "wait_s": 7.0}]
    assert len(server.requests) == 2


async def test_retry_after_as_an_http_date(server: FakeOpenAI, sleeps: Sleeps) -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    server.push(rate_limited(retry_after=when), text("ok"))
    result = await play(harness(local(server, max_backoff_s=30.0), sleeps), request())
    assert result.output == "ok"
    assert len(sleeps.waits) == 1 and 17.0 <= sleeps.waits[0] <= 20.0


async def test_a_huge_retry_after_is_bounded(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.push(rate_limited(retry_after=3600), text("ok"))
    await play(harness(local(server, max_backoff_s=30.0), sleeps), request())
    assert sleeps.waits == [60.0]  # at most twice the longest backoff


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_5xx_are_retried_with_backoff_then_succeed(
    server: FakeOpenAI, sleeps: Sleeps, stream: bool
) -> None:
    server.push(status(500), status(503), text("ok"))
    endpoint = local(server, backoff_s=0.2, max_backoff_s=10.0)
    result = await play(harness(endpoint, sleeps), request(events=[] if stream else None))
    assert (result.output, result.stop_reason, result.error) == ("ok", "end_turn", None)
    # jitter 0.5 gives 0.75 of the ceiling: 0.2 then 0.4
    assert sleeps.waits == pytest.approx([0.15, 0.3])
    assert [(r["attempt"], r["error"].split(":")[0], r["wait_s"]) for r in result.retries] == [
        (1, "500 server error", 0.15),
        (2, "503 server error", 0.3),
    ]


def test_backoff_is_bounded() -> None:
    endpoint = Endpoint("openai", "http://127.0.0.1:9/v1", backoff_s=1.0, max_backoff_s=4.0)
    client = ChatClient(endpoint, jitter=lambda: 1.0)
    assert [client.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    half = ChatClient(endpoint, jitter=lambda: 0.0)
    assert [half.backoff(n) for n in range(1, 4)] == [0.5, 1.0, 2.0]


async def test_giving_up_fails_the_run_and_keeps_what_it_did(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.push(tool_call("add", {"a": 2, "b": 3}), status(503), status(502), status(500))
    result = await play(harness(local(server, max_attempts=3), sleeps), request())
    assert result.stop_reason == "error"
    assert result.error is not None
    assert result.error.startswith(f"openai ({server.url}/v1) failed 3 times calling 'fake-model'")
    assert result.error.endswith("last error: 500 server error: fake 500: Internal Server Error")
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool"]  # the partial run is kept
    assert [r["attempt"] for r in result.retries] == [1, 2, 3]
    assert result.retries[-1]["wait_s"] == 0.0 and len(sleeps.waits) == 2
    assert len(server.requests) == 4


async def test_a_hang_past_the_timeout_is_retried(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.push(hang(3.0), text("late but fine"))
    started = time.perf_counter()
    result = await play(harness(local(server, timeout_s=0.3), sleeps), request())
    assert time.perf_counter() - started < 2.0
    assert result.output == "late but fine"
    assert result.retries[0]["error"] == "no reply within 0.3 s"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_hanging_every_time_fails_with_no_reply_within(server: FakeOpenAI, stream: bool) -> None:
    server.push(hang(3.0), hang(3.0))
    started = time.perf_counter()
    result = await play(
        harness(local(server, timeout_s=0.3, max_attempts=2)), request(events=[] if stream else None)
    )
    assert time.perf_counter() - started < 2.0
    assert result.stop_reason == "error"
    assert "failed 2 times" in (result.error or "") and "no reply within 0.3 s" in (result.error or "")


def test_one_harness_serves_one_event_loop_after_another(server: FakeOpenAI) -> None:
    """``machine chat`` runs each exchange in an event loop of its own with the same harness: the
    pooled connections of the loop that ended must not be reused."""
    server.default = text("hi")
    h = harness(local(server, max_attempts=1))

    async def exchange() -> HarnessResult:
        with anyio.fail_after(RUN_LIMIT_S):
            return await h.run(request(tools=[]))

    with warnings.catch_warnings():  # the sockets of a loop that ended can only be closed by the GC
        warnings.simplefilter("ignore", ResourceWarning)
        results = [anyio.run(exchange) for _ in range(3)]
        anyio.run(h.client.aclose)
        gc.collect()
    assert [(r.output, r.error) for r in results] == [("hi", None)] * 3


def test_the_server_stops_at_once_while_a_handler_hangs() -> None:
    import socket

    fake = FakeOpenAI([hang(5.0)]).start()
    host, port = fake.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        body = b'{"model": "m", "messages": []}'
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        deadline = time.monotonic() + 2
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.perf_counter()
        fake.stop()
        assert time.perf_counter() - started < 1.0
    assert fake.requests[0].played == "fault:hang"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("fault", [Fault("malformed"), Fault("no_choices")], ids=["malformed", "no-choices"])
async def test_an_unparseable_reply_fails_the_run_with_a_reason(
    server: FakeOpenAI, stream: bool, fault: Fault
) -> None:
    server.push(fault)
    result = await play(harness(local(server)), request(events=[] if stream else None))
    assert result.stop_reason == "error"
    assert f"openai ({server.url}/v1) sent a reply that could not be parsed" in (result.error or "")
    assert len(server.requests) == 1  # a reply that cannot be read is not asked again
    assert [m.role for m in result.trajectory] == ["user"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_an_error_object_in_a_200_reply_is_retried(
    server: FakeOpenAI, sleeps: Sleeps, stream: bool
) -> None:
    server.push(Fault("stream_error", message="Provider returned error"), text("ok"))
    result = await play(harness(local(server), sleeps), request(events=[] if stream else None))
    assert result.output == "ok"
    assert result.retries[0]["error"] == "error in the reply: Provider returned error"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_dropped_connection_is_retried(server: FakeOpenAI, sleeps: Sleeps, stream: bool) -> None:
    server.push(Fault("drop"), text("ok"))
    result = await play(harness(local(server), sleeps), request(events=[] if stream else None))
    assert result.output == "ok"
    assert result.retries[0]["error"].startswith("network error")


async def test_tool_call_with_invalid_json_arguments_is_a_tool_error_the_model_sees(
    server: FakeOpenAI,
) -> None:
    server.push(tool_call("add", '{"a": 2, "b": ', id="bad"), text("Sorry, let me stop."))
    result = await play(harness(local(server)), request())
    assert result.stop_reason == "end_turn" and result.error is None
    error = result.trajectory[2]
    assert error.is_error and error.tool_call_id == "bad"
    assert error.content == "the arguments of add were not valid JSON; send a JSON object"
    sent = server.requests[1].messages
    assert (
        sent[2]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": '
    )  # sent back as the model wrote it
    assert sent[3] == {"role": "tool", "tool_call_id": "bad", "content": error.content}


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (401, "Incorrect API key provided: tk-***"),
        (404, "The model `nope/nothing` does not exist"),
        (400, "This model's maximum context length is 8192 tokens"),
    ],
)
async def test_client_errors_are_not_retried_and_carry_the_providers_message(
    server: FakeOpenAI, sleeps: Sleeps, code: int, message: str
) -> None:
    server.push(status(code, message), text("never asked"))
    result = await play(harness(local(server), sleeps), request(model="nope/nothing"))
    assert result.stop_reason == "error"
    assert result.error == f"openai ({server.url}/v1) refused the call to 'nope/nothing': {code} {message}"
    assert len(server.requests) == 1 and sleeps.waits == [] and result.retries == []


# --- what is sent -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effort", "sent"),
    [
        ("medium", "medium"),
        ("XHigh", "xhigh"),
        (0.5, "medium"),
        (0.0, "none"),
        ("0.95", "xhigh"),
        (None, None),
    ],
)
async def test_effort_is_sent_as_reasoning_effort(server: FakeOpenAI, effort: Any, sent: str | None) -> None:
    server.push(text("ok"))
    await play(harness(local(server)), request(effort=parse_effort(effort)))
    assert server.requests[0].body.get("reasoning_effort") == sent


async def test_a_machine_without_tools_sends_no_tools(server: FakeOpenAI) -> None:
    server.push(text("ok"))
    await play(harness(local(server)), request(tools=[]))
    assert "tools" not in server.requests[0].body


async def test_history_comes_between_the_instructions_and_the_input(server: FakeOpenAI) -> None:
    from machine import Message

    server.push(text("ok"))
    history = [Message(role="user", content="hi"), Message(role="assistant", content="hello")]
    await play(harness(local(server)), request(history=history))
    assert server.requests[0].messages == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "add 2 and 3"},
    ]


# --- through the workspace: a stored run ---------------------------------------------------------


def calculator(model: str) -> Any:
    rubric = define_rubric({"sum": {"description": "The answer is the sum.", "weight": 1}})
    from machine import check

    evaluator = define_evaluator(rubric, {"sum": check("has-5", lambda run: "5" in run.output)})
    return define_machine(
        name="calc",
        intent="Add numbers.",
        instructions=INSTRUCTIONS,
        model=model,
        rubric=rubric,
        evaluator=evaluator,
        tools=[add],
    )


async def test_workspace_run_is_priced_graded_and_stored(server: FakeOpenAI, tmp_path: Path) -> None:
    model = "Qwen/Qwen3.6-35B-A3B"
    server.push(
        status(429, retry_after=0),
        tool_call("add", {"a": 2, "b": 3}, prompt_tokens=1000, cached_tokens=400, completion_tokens=200),
        text("5", prompt_tokens=1000, cached_tokens=400, completion_tokens=200),
    )
    h = harness(local(server))
    ws = open_workspace(tmp_path, harness=h, budget=Budget(1.0))
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            run = await ws.run(calculator(model), "add 2 and 3", grade=True)
    finally:
        await h.client.aclose()
    assert (run.status, run.output, run.harness) == ("ok", "5", "openai")
    assert run.cost_usd == pytest.approx(2 * 0.0006342)
    assert run.retries[0]["error"].startswith("429 rate limited")
    assert run.score == 1.0
    stored = ws.store.get(run.id)
    assert stored.trajectory == run.trajectory and stored.retries == run.retries


async def test_workspace_run_that_gives_up_is_stored_as_failed(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(tool_call("add", {"a": 2, "b": 3}), Fault("malformed"))
    h = harness(local(server))
    ws = open_workspace(tmp_path, harness=h, budget=Budget(None))
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            run = await ws.run(calculator("Qwen/Qwen3.6-35B-A3B"), "add 2 and 3", grade=True)
    finally:
        await h.client.aclose()
    assert run.status == "error" and "could not be parsed" in (run.error or "")
    assert run.stop_reason == "error" and run.scorecard is None
    assert [m.role for m in ws.store.get(run.id).trajectory] == ["user", "assistant", "tool"]
