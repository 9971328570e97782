"""The ``fx`` harness: the Vercel AI Gateway through its OpenAI-compatible endpoint, on the shared
chat-completions client, priced by the prices the Gateway publishes at ``GET /models``. Tested against
the local OpenAI-compatible server (nothing leaves 127.0.0.1), through the real command line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner
from helpers.cli_workspace import write_workspace
from helpers.openai_server import FakeOpenAI, text

from machine.budget import Price
from machine.cli import cli
from machine.clients.chat._gateway_prices import parse_prices

if TYPE_CHECKING:
    from pathlib import Path

    from helpers.cli_workspace import WorkspaceFolder

SONNET = "anthropic/claude-sonnet-5.5"
LISTED = [
    {"id": SONNET, "pricing": {"input": "0.000003", "output": "0.000015", "input_cache_read": "0.0000003"}},
    {"id": "broken/model", "pricing": {"input": "free", "output": "-1"}},
]


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setattr("machine.budget._pricing.PUBLISHED", {})  # this test's prices only
    monkeypatch.setenv("AI_GATEWAY_API_KEY", "vck-test")
    for name in ("MACHINE_HARNESS", "AI_GATEWAY_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI() as server:
        server.models = LISTED
        yield server


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceFolder:
    return write_workspace(tmp_path / "ws")


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_a_run_is_sent_to_the_gateway_and_charged_at_its_published_price(
    gateway: FakeOpenAI, ws: WorkspaceFolder
) -> None:
    gateway.push(text("hello ann", prompt_tokens=1000, completion_tokens=100))
    result = invoke(
        "run", "plain", "hi", "--harness", "fx", "--base-url", gateway.url + "/v1", "--model", f"fx/{SONNET}",
        "--budget", "1", "--json", "--workspace", ws.root,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    listing, call = gateway.requests
    assert (listing.method, listing.path) == ("GET", "/v1/models")
    assert listing.headers["authorization"] == call.headers["authorization"] == "Bearer vck-test"
    assert call.path == "/v1/chat/completions" and call.body["model"] == SONNET  # the prefix routes, and goes
    assert '"cost_usd": 0.0045' in result.stdout  # 1000 x $3 + 100 x $15 per million
    assert "spent $0.0045" in result.stderr


def test_a_model_the_gateway_does_not_price_is_refused_under_a_budget(
    gateway: FakeOpenAI, ws: WorkspaceFolder
) -> None:
    result = invoke(
        "run", "plain", "hi", "--harness", "fx", "--base-url", gateway.url + "/v1", "--model", "broken/model",
        "--budget", "1", "--workspace", ws.root,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "'broken/model' has no known price" in result.stderr and "--price-as" in result.stderr
    assert [r.method for r in gateway.requests] == ["GET"]  # nothing was sent to the model


def test_without_a_key_it_says_what_to_set(
    gateway: FakeOpenAI, ws: WorkspaceFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AI_GATEWAY_API_KEY")
    result = invoke(
        "run", "plain", "hi", "--harness", "fx", "--base-url", gateway.url + "/v1", "--workspace", ws.root
    )
    assert result.exit_code == 2 and "needs AI_GATEWAY_API_KEY" in result.stderr
    assert gateway.requests == []


def test_published_prices_are_parsed_as_hostile_input() -> None:
    body = {
        "data": [
            *LISTED,
            {"id": "nan/model", "pricing": {"input": "nan", "output": "0"}},
            {"id": "no-pricing"},
            {"pricing": {"input": "1", "output": "1"}},
            "not a row",
        ]
    }
    assert parse_prices(body) == {SONNET: Price(3.0, 0.3, 15.0)}
    assert parse_prices({"data": "nope"}) == {} and parse_prices(["x"]) == {}
