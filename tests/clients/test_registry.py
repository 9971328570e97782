import json
from pathlib import Path

import pytest

from machine import BadInputError, HarnessError
from machine.clients import HARNESSES, default_harness_name, make_harness
from machine.clients.echo import EchoHarness
from machine.clients.scripted import ScriptedHarness


def test_unknown_harness_lists_the_choices() -> None:
    with pytest.raises(BadInputError, match="unknown harness 'gpt'; choose one of: echo, scripted, tinker"):
        make_harness("gpt")


def test_echo() -> None:
    assert isinstance(make_harness("echo"), EchoHarness)


def test_scripted_with_script(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"rules": [{"match": ".", "turns": [{"text": "hi"}]}]}), encoding="utf-8")
    harness = make_harness("scripted", script=path)
    assert isinstance(harness, ScriptedHarness)
    assert harness.source == str(path)


def test_scripted_without_script_asks_for_one() -> None:
    with pytest.raises(BadInputError, match="needs a script; pass script=PATH"):
        make_harness("scripted")


@pytest.mark.parametrize(
    ("name", "key"), [("tinker", "TINKER_API_KEY"), ("openrouter", "OPENROUTER_API_KEY")]
)
def test_remote_harness_without_key_says_to_set_it_or_use_echo(
    monkeypatch: pytest.MonkeyPatch, name: str, key: str
) -> None:
    monkeypatch.delenv(key, raising=False)
    with pytest.raises(HarnessError, match=f"needs {key}: set it") as info:
        make_harness(name)
    assert "harness='echo'" in str(info.value)  # a library error, spelt for Python (the CLI says --harness)


def test_openai_without_endpoint_says_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(HarnessError, match="set OPENAI_BASE_URL"):
        make_harness("openai")


def test_default_is_tinker_unless_env_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    assert default_harness_name() == "tinker"
    monkeypatch.setenv("MACHINE_HARNESS", "echo")
    assert default_harness_name() == "echo"
    assert isinstance(make_harness(), EchoHarness)


def test_default_tinker_without_key_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    with pytest.raises(HarnessError, match="TINKER_API_KEY"):
        make_harness()


def test_every_listed_harness_is_known() -> None:
    assert set(HARNESSES) >= {"echo", "scripted", "tinker"}


@pytest.mark.parametrize(("name", "variable"), [("opencode", "MACHINE_OPENCODE"), ("pi", "MACHINE_PI")])
def test_a_host_harness_without_its_program_says_how_to_install_it_up_front(
    monkeypatch: pytest.MonkeyPatch, name: str, variable: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(HarnessError, match=f"npm install -g .*{variable}"):
        make_harness(name)
