"""The local harness on a tiny model made in the test (no download): replies, tool calls parsed and
answered, malformed calls, max_steps, seeded sampling, token usage, and free runs under a budget."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.tiny_model import needs_local_stack, restored, steer, tiny_model_folder

needs_local_stack()

from machine.budget import Budget  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._chat_format import prompt_text as local_prompt_text  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.runs import HarnessRequest, ToolContext, ToolFailure, openai_tools, parse_effort, to_openai, tool  # noqa: E402

SEEN: list[dict[str, Any]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    SEEN.append({"a": a, "b": b})
    return a + b


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolFailure(f"refused: {reason}")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    yield f"local:{folder}"
    _local_models.forget()


@pytest.fixture
def fresh(tiny: str) -> Iterator[str]:
    """The tiny model, with whatever a test did to its ``generate`` undone afterwards."""
    SEEN.clear()
    with restored(_local_models.load(tiny)):
        yield tiny


def request(model: str, **options: Any) -> HarnessRequest:
    tools = options.pop("tools", [add, fail])
    return HarnessRequest(
        run_id="r1",
        machine="m",
        instructions=options.pop("instructions", "Answer briefly."),
        input=options.pop("input", "What is 1 + 2?"),
        model=model,
        tools=tools,
        tool_context=ToolContext(run_id="r1"),
        budget=options.pop("budget", Budget(0.01)),
        **options,
    )


async def test_a_reply_with_its_prompt_and_generated_tokens_counted(fresh: str) -> None:
    harness = LocalHarness(max_new_tokens=12)
    result = await harness.run(request(fresh, temperature=0.0))
    loaded = _local_models.load(fresh)
    wire = to_openai("Answer briefly.", result.trajectory[:1], send_reasoning=False)
    prompt = local_prompt_text(loaded.tokenizer, wire, openai_tools([add, fail]))
    assert result.usage.input_tokens == len(loaded.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert 1 <= result.usage.output_tokens <= 12
    assert [m.role for m in result.trajectory] == ["user", "assistant"]
    assert result.stop_reason in ("end_turn", "max_tokens")
    assert result.cost_usd == 0.0 and result.error is None


async def test_a_tool_call_is_parsed_run_and_its_result_shown_to_the_model(fresh: str) -> None:
    prompts: list[str] = []

    def replies(prompt: str) -> str:
        prompts.append(prompt)
        if '<tool_response name="add">' in prompt:
            return "The sum is 3."
        return 'Adding.\n<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'

    steer(_local_models.load(fresh), replies)
    result = await LocalHarness(max_new_tokens=80).run(request(fresh))
    assert SEEN == [{"a": 1, "b": 2}]
    assistant, answer = result.trajectory[1], result.trajectory[3]
    assert assistant.content == "Adding."
    assert [(c.name, c.arguments) for c in assistant.tool_calls] == [("add", {"a": 1, "b": 2})]
    assert result.trajectory[2].content == "3" and not result.trajectory[2].is_error
    assert '<tool_response name="add">\n3\n</tool_response>' in prompts[1]
    assert answer.content == "The sum is 3." and result.output == "The sum is 3."
    assert result.stop_reason == "end_turn"


async def test_a_malformed_call_is_a_tool_error_the_model_sees(fresh: str) -> None:
    prompts: list[str] = []

    def replies(prompt: str) -> str:
        prompts.append(prompt)
        if "<tool_response" in prompt.split("<|im_start|>user")[-1]:
            return "Sorry."
        return '<tool_call>{"name": "add", "arguments": {"a": 1, "b": }}</tool_call>'

    steer(_local_models.load(fresh), replies)
    result = await LocalHarness(max_new_tokens=80).run(request(fresh))
    call = result.trajectory[1].tool_calls[0]
    assert call.name == "add" and call.arguments is None and call.raw_arguments == '{"a": 1, "b": }'
    error = result.trajectory[2]
    assert error.is_error and "not valid JSON" in error.content
    assert error.content in prompts[1]
    assert SEEN == [] and result.output == "Sorry."


async def test_max_steps_stops_a_model_that_keeps_calling_tools(fresh: str) -> None:
    calls = steer(
        _local_models.load(fresh),
        lambda p: '<tool_call>{"name": "fail", "arguments": {"reason": "x"}}</tool_call>',
    )
    result = await LocalHarness(max_new_tokens=80).run(request(fresh, max_steps=3))
    assert result.stop_reason == "max_steps"
    assert [m.role for m in result.trajectory].count("assistant") == 3
    assert calls == [1, 1, 1]
    assert all("refused: x" in m.content for m in result.trajectory if m.role == "tool")


async def test_a_reply_cut_at_the_token_limit_says_so(fresh: str) -> None:
    steer(_local_models.load(fresh), lambda p: "word " * 40)
    result = await LocalHarness(max_new_tokens=5).run(request(fresh))
    assert result.stop_reason == "max_tokens"
    assert result.usage.output_tokens == 5


async def test_the_same_seed_samples_the_same_and_another_seed_differs(fresh: str) -> None:
    harness = LocalHarness(max_new_tokens=24)

    async def sample(seed: int, temperature: float = 1.0) -> str:
        return (await harness.run(request(fresh, seed=seed, temperature=temperature))).output

    first = await sample(11)
    assert await sample(11) == first
    assert await sample(12) != first
    assert await sample(11, 0.0) == await sample(12, 0.0)  # greedy: the seed does not matter


async def test_effort_is_ignored_with_one_note_on_stderr(
    fresh: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from machine.clients import local

    local._NOTED.discard("effort")
    harness = LocalHarness(max_new_tokens=2)
    for _ in range(2):
        await harness.run(request(fresh, effort=parse_effort("medium")))
    err = capsys.readouterr().err
    assert err.count("the local harness ignores the reasoning effort") == 1


async def test_a_negative_temperature_is_refused(fresh: str) -> None:
    with pytest.raises(BadInputError, match="below 0"):
        await LocalHarness().run(request(fresh, temperature=-1.0))


async def test_an_adapter_changes_the_output_and_is_loaded_from_its_folder(
    fresh: str, tmp_path: Path
) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_folder = fresh.removeprefix("local:")
    base = AutoModelForCausalLM.from_pretrained(base_folder)
    config = LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(base, config).save_pretrained(tmp_path / "adapter")
    harness = LocalHarness(max_new_tokens=16)
    plain = await harness.run(request(fresh, temperature=0.0, tools=[]))
    tuned = await harness.run(request(f"{fresh}+{tmp_path / 'adapter'}", temperature=0.0, tools=[]))
    assert tuned.output != plain.output
    alone = await harness.run(request(f"local:{tmp_path / 'adapter'}", temperature=0.0, tools=[]))
    assert alone.output == tuned.output  # the adapter names its base
    assert json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"]


def test_loading_is_quiet_only_while_it_lasts(capfd: pytest.CaptureFixture[str]) -> None:
    from transformers.utils import logging as transformers_logging

    from machine.clients.local._models import quiet_loading

    reader: Any = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    drawn, level = reader.tqdm, transformers_logging.get_verbosity()
    with quiet_loading():
        list(reader.tqdm(range(50), desc="Converting"))
        transformers_logging.get_logger("transformers.modeling_utils").warning("means nothing here")
        assert not transformers_logging.is_progress_bar_enabled()
    quiet = capfd.readouterr().err
    assert "Converting" not in quiet and "means nothing here" not in quiet, quiet
    assert reader.tqdm is drawn and transformers_logging.get_verbosity() == level
    list(reader.tqdm(range(3), desc="Drawn again"))
    assert "Drawn again" in capfd.readouterr().err  # others' bars are theirs to draw
