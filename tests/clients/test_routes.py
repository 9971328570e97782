"""Which provider serves a model when opencode or pi runs the agent loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from machine.clients._routes import Route, route_model
from machine.clients.hosts._programs import find_binary, host_environment  # the hosts' plumbing, on purpose
from machine.errors import BadInputError, Fix, HarnessError


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TINKER_API_KEY", "TINKER_BASE_URL", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_a_base_url_serves_every_model_as_given() -> None:
    route = route_model("Qwen/Qwen3.8-27B", harness="pi", base_url="http://127.0.0.1:9/v1/")
    assert route == Route("endpoint", "Qwen/Qwen3.8-27B", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")


def test_tinker_ids_go_to_tinker_with_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HarnessError, match="TINKER_API_KEY"):
        route_model("Qwen/Qwen3.8-27B", harness="opencode")
    monkeypatch.setenv("TINKER_API_KEY", "k")
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9/svc/")
    for model in ("Qwen/Qwen3.8-27B", "tinker/Qwen/Qwen3.8-27B"):
        route = route_model(model, harness="opencode")
        url = "http://127.0.0.1:9/svc/oai/api/v1"
        assert route == Route("tinker", "Qwen/Qwen3.8-27B", url, "TINKER_API_KEY")
    assert route_model("tinker://run-1/sampler/5", harness="pi").provider == "tinker"


def test_openrouter_ids_need_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HarnessError, match="OPENROUTER_API_KEY"):
        route_model("openrouter/thinkingmachines/inkling:free", harness="pi")
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    route = route_model("openrouter/thinkingmachines/inkling:free", harness="pi")
    assert (route.provider, route.model, route.key_env) == (
        "openrouter",
        "thinkingmachines/inkling:free",
        "OPENROUTER_API_KEY",
    )


def test_other_ids_are_the_hosts_own_and_a_bare_name_is_refused() -> None:
    route = route_model("anthropic/claude-sonnet-4", harness="opencode")
    assert route == Route("anthropic", "claude-sonnet-4") and route.own
    with pytest.raises(BadInputError, match="cannot tell who serves 'gpt-oss'") as refused:
        route_model("gpt-oss", harness="opencode")
    assert refused.value.fixes == (Fix("base_url", "URL", "for an OpenAI-compatible endpoint"),)


def test_a_missing_host_program_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_OPENCODE", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(HarnessError, match=r"npm install -g opencode-ai.*MACHINE_OPENCODE"):
        find_binary("opencode", "MACHINE_OPENCODE", "npm install -g opencode-ai")


def test_a_host_gets_a_private_home_and_only_the_keys_it_needs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tk")
    monkeypatch.setenv("OTHER_API_KEY", "ok")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    route = route_model("Qwen/Qwen3.8-27B", harness="pi")
    env = host_environment(route, tmp_path, {"EXTRA": "1"})
    assert env["HOME"] == str(tmp_path) and env["XDG_CONFIG_HOME"] == str(tmp_path / "config")
    assert env["TINKER_API_KEY"] == "tk" and env["EXTRA"] == "1"
    assert "OTHER_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    own = host_environment(None, tmp_path, own_keys=True)
    assert own["OTHER_API_KEY"] == "ok" and own["AWS_SECRET_ACCESS_KEY"] == "secret"
