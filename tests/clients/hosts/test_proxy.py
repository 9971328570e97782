"""The loopback model proxy on its own, between a real HTTP client and a local OpenAI-compatible server:
it forwards only what carries its token for a run it meters, bounds and reserves every call before it
is sent, and believes no usage or reply size it should not. Only loopback traffic, bounded in time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from helpers.openai_server import FakeOpenAI, Fault, Reply, hang, text

import machine.clients.hosts._proxy as proxy_module
from machine import Budget, Usage
from machine.budget import price_of
from machine.clients._routes import Route
from machine.clients._wire import prompt_bound
from machine.clients.hosts._proxy import Meter, ModelProxy

MODEL = "Qwen/Qwen3.8-27B"
MAX_TOKENS = 1000
LIMIT_S = 20.0


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelProxy]:
    monkeypatch.setenv("MACHINE_MAX_TOKENS", str(MAX_TOKENS))
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    made = ModelProxy()
    made.start()
    try:
        yield made
    finally:
        made.stop()


def cost(usage: Usage) -> float:
    price = price_of(MODEL)
    assert price is not None
    return price.cost(usage)


def base(proxy: ModelProxy, fake: FakeOpenAI) -> str:
    routed = proxy.route(Route("endpoint", "m", fake.url + "/v1", "OPENAI_API_KEY")).base_url
    assert routed is not None and proxy.token in routed and fake.url not in routed
    return routed


def completion(**kw: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **kw}


async def post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=LIMIT_S, trust_env=False) as client:
        with anyio.fail_after(LIMIT_S):
            return await client.post(url, json=body, headers={"authorization": "Bearer dummy", **headers})


def reservation(forwarded: dict[str, Any]) -> float:
    return cost(Usage(input_tokens=prompt_bound(forwarded), output_tokens=MAX_TOKENS))


async def test_a_call_is_clamped_sent_with_the_real_key_and_charged_what_it_reported(
    proxy: ModelProxy, fake: FakeOpenAI
) -> None:
    budget = Budget(1)
    proxy.sole = Meter(budget, MODEL)
    fake.push(text("hello", prompt_tokens=100, completion_tokens=5))
    reply = await post(base(proxy, fake) + "/chat/completions", completion(max_tokens=999_999))
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "hello"
    [seen] = fake.requests
    assert seen.path == "/v1/chat/completions" and seen.body["max_tokens"] == MAX_TOKENS
    assert seen.headers["authorization"] == "Bearer sk-real"
    expected = cost(Usage(input_tokens=100, output_tokens=5))
    assert proxy.sole.cost == pytest.approx(expected) and budget.spent == pytest.approx(expected)
    assert budget.reserved == 0.0


async def test_a_stream_is_asked_for_its_usage_passed_on_whole_and_charged(
    proxy: ModelProxy, fake: FakeOpenAI
) -> None:
    budget = Budget(1)
    proxy.sole = Meter(budget, MODEL)
    fake.push(text("hello there", prompt_tokens=100, completion_tokens=5))
    reply = await post(base(proxy, fake) + "/chat/completions", completion(stream=True))
    events = [line[6:] for line in reply.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert said == "hello there"
    assert fake.requests[0].body["stream_options"] == {"include_usage": True}
    assert budget.spent == pytest.approx(cost(Usage(input_tokens=100, output_tokens=5)))


async def test_nothing_is_forwarded_without_the_token_or_a_run_to_charge(
    proxy: ModelProxy, fake: FakeOpenAI
) -> None:
    url = base(proxy, fake)
    cut = url.replace(proxy.token, proxy.token[:-1])  # one character short
    assert (await post(cut + "/chat/completions", completion())).status_code == 404
    assert (await post(url + "/chat/completions", completion())).status_code == 403  # no run metered
    with proxy.metering("ses_1", Meter(Budget(1), MODEL)):
        other = await post(url + "/chat/completions", completion(), **{"x-session-id": "ses_2"})
    assert other.status_code == 403
    assert (await post(url + "/embeddings", completion())).status_code == 404
    assert fake.requests == []


async def test_a_spent_budget_refuses_the_call_before_it_is_sent(proxy: ModelProxy, fake: FakeOpenAI) -> None:
    budget = Budget(0.001)
    budget.charge(MODEL, Usage(output_tokens=1000))  # $0.0056: spent past the cap
    proxy.sole = meter = Meter(budget, MODEL)
    reply = await post(base(proxy, fake) + "/chat/completions", completion())
    assert reply.status_code == 402 and "is spent" in reply.json()["error"]["message"]
    assert fake.requests == [] and meter.refused is not None and meter.cost == 0.0


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 30, "completion_tokens": -4_000_000_000},
        {"prompt_tokens": float("nan"), "completion_tokens": 5},
        {"prompt_tokens": 30, "completion_tokens": MAX_TOKENS + 1},
        {"prompt_tokens": "30", "completion_tokens": 5},
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_usage_that_cannot_be_right_fails_the_call_charged_at_its_reservation(
    proxy: ModelProxy, fake: FakeOpenAI, usage: dict[str, Any], stream: bool
) -> None:
    budget = Budget(1)
    proxy.sole = meter = Meter(budget, MODEL)
    fake.push(Reply(content="hi", raw_usage=usage))
    reply = await post(base(proxy, fake) + "/chat/completions", completion(stream=stream))
    said = reply.text if stream else reply.json()["error"]["message"]
    assert reply.status_code == (200 if stream else 422)
    assert "cannot be right" in said or "not a number of tokens" in said
    assert "[DONE]" not in reply.text
    forwarded = fake.requests[0].body
    assert budget.spent == pytest.approx(reservation(forwarded)) and budget.spent > 0
    assert meter.cost == pytest.approx(budget.spent) and meter.failed is not None
    assert budget.reserved == 0.0


async def test_a_reply_over_the_size_cap_fails_the_call(
    proxy: ModelProxy, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proxy_module, "MAX_REPLY_BYTES", 4096)
    budget = Budget(1)
    proxy.sole = Meter(budget, MODEL)
    fake.push(text("x" * 10_000, prompt_tokens=10, completion_tokens=5))
    reply = await post(base(proxy, fake) + "/chat/completions", completion())
    assert reply.status_code == 422 and "longer than 4096 bytes" in reply.json()["error"]["message"]
    assert "x" * 100 not in reply.text
    assert budget.spent == pytest.approx(reservation(fake.requests[0].body))


@pytest.mark.slow
async def test_an_endpoint_that_hangs_fails_the_call_in_time_and_costs_nothing(
    proxy: ModelProxy, fake: FakeOpenAI
) -> None:
    budget = Budget(1)
    proxy.sole = Meter(budget, MODEL)
    fake.push(hang(5.0))
    started = anyio.current_time()
    reply = await post(base(proxy, fake) + "/chat/completions", completion())
    assert reply.status_code == 502 and anyio.current_time() - started < 4.5  # MACHINE_MODEL_TIMEOUT=2
    assert budget.spent == 0.0 and budget.reserved == 0.0 and budget.in_flight == 0


async def test_other_reads_are_forwarded_with_the_real_key(proxy: ModelProxy, fake: FakeOpenAI) -> None:
    async with httpx.AsyncClient(timeout=LIMIT_S, trust_env=False) as client:
        with anyio.fail_after(LIMIT_S):
            reply = await client.get(base(proxy, fake) + "/models")
    assert reply.status_code == 404  # what the endpoint answered, passed on
    [seen] = fake.requests
    assert (seen.method, seen.path, seen.headers["authorization"]) == ("GET", "/v1/models", "Bearer sk-real")


async def test_a_reply_that_does_not_parse_is_passed_on_and_the_proxy_serves_the_next_call(
    proxy: ModelProxy, fake: FakeOpenAI
) -> None:
    budget = Budget(1)
    proxy.sole = Meter(budget, MODEL)
    fake.push(Fault("malformed"), Fault("drop"), text("fine", prompt_tokens=10, completion_tokens=2))
    url = base(proxy, fake) + "/chat/completions"
    first = await post(url, completion())
    assert first.status_code == 200 and first.text.startswith('{"id": "chatcmpl-fake", "choices"')
    assert (await post(url, completion())).status_code == 502  # cut off before its end
    assert (await post(url, completion())).json()["choices"][0]["message"]["content"] == "fine"
    assert budget.spent == pytest.approx(cost(Usage(input_tokens=10, output_tokens=2)))
    assert budget.reserved == 0.0 and budget.in_flight == 0
