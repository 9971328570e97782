"""How the local trainer renders examples: exactly the local harness's prompts, labels on the target replies
only, one whole sequence where the chat template has the prefix property (checked per example) and one
sequence per step where it has not, a failed tool step kept as context, and max_length cuts counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder, tiny_tokenizer
from helpers.weather_runs import (
    BAD_REPLY,
    INSTRUCTIONS,
    after_a_bad_reply,
    answer,
    get_weather,
    weather_machine,
    weather_run,
)

needs_local_stack()

from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._chat_format import FORMAT as LOCAL_CHAT_FORMAT  # noqa: E402
from machine.clients.local._chat_format import prompt_text as local_prompt_text  # noqa: E402
from machine.clients.local._train_data import IGNORE, TrainSequence  # noqa: E402
from machine.clients.local.trainer import LocalTrainer  # noqa: E402
from machine.learn.train import example_of, rows_of  # noqa: E402
from machine.runs import openai_tools, to_openai  # noqa: E402
from machine.training import Prepared, TrainExample, TrainSettings  # noqa: E402

DROPPING = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' and not loop.last %}"
    "{{ '<|im_start|>assistant\\n<|im_end|>\\n' }}"  # earlier replies' content is left out
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The tiny model with ChatML, and the same model with a template that drops earlier replies."""
    root = tmp_path_factory.mktemp("tiny")
    plain = tiny_model_folder(root / "plain")
    dropping = tiny_model_folder(root / "dropping")
    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = DROPPING
    tokenizer.save_pretrained(dropping)
    yield f"local:{plain}", f"local:{dropping}"
    _local_models.forget()


def weather() -> TrainExample:
    found = example_of(weather_run(), weather_machine())
    assert found is not None
    return found


def prepare(base: str, *examples: TrainExample, **changes: Any) -> tuple[list[TrainSequence], Prepared]:
    prepared = LocalTrainer().prepare(list(examples), TrainSettings(base_model=base, **changes))
    return list(prepared.data), prepared


def learned(base: str, sequence: TrainSequence) -> str:
    tokenizer = _local_models.load(base).tokenizer
    return str(tokenizer.decode([t for t in sequence.labels if t != IGNORE]))


def text(base: str, ids: list[int]) -> str:
    return str(_local_models.load(base).tokenizer.decode(ids))


def test_a_failed_tool_step_is_context_not_a_target() -> None:
    assert weather().targets == [
        4,
        6,
    ]  # system, user, failed call (2), its error, good call (4), result, answer


def test_a_tool_run_is_one_sequence_starting_with_the_harness_prompt(models: tuple[str, str]) -> None:
    base, _ = models
    (sequence,), prepared = prepare(base, weather())
    assert (prepared.whole_run, prepared.per_step, prepared.sequences) == (1, 0, 1)
    tokenizer = _local_models.load(base).tokenizer
    wire = to_openai(INSTRUCTIONS, weather_run().trajectory[:3], send_reasoning=False)
    prompt = local_prompt_text(tokenizer, wire, openai_tools([get_weather]))
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert sequence.input_ids[: len(ids)] == ids  # the good call's prompt, exactly as the harness writes it
    assert all(label == IGNORE for label in sequence.labels[: len(ids)])
    taught = learned(base, sequence)
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert taught == f"{call}<|im_end|>{answer('Paris')}<|im_end|>"
    whole = text(base, sequence.input_ids)
    assert '"town"' in whole and "unknown argument" in whole and "# Tools" in whole  # context
    assert '"town"' not in taught and "unknown argument" not in taught
    assert text(base, sequence.input_ids).endswith(f"{answer('Paris')}<|im_end|>")  # nothing after


def test_labels_are_the_target_tokens_and_nothing_else(models: tuple[str, str]) -> None:
    base, _ = models
    example = TrainExample(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello world"},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "bye!"},
        ],
        targets=[4],
    )
    (sequence,), prepared = prepare(base, example)
    assert learned(base, sequence) == "bye!<|im_end|>"
    kept = [i for i, label in enumerate(sequence.labels) if label != IGNORE]
    assert [sequence.input_ids[i] for i in kept] == [sequence.labels[i] for i in kept]
    assert prepared.target_tokens == len(kept) and prepared.tokens == len(sequence.input_ids)
    assert prepared.renderer.startswith(f"{LOCAL_CHAT_FORMAT}/chat-template:")


def test_a_reply_marked_bad_before_the_good_turn_carries_no_loss(models: tuple[str, str]) -> None:
    """The exported row of a good turn after a reply the person marked bad, read as the trainer reads a
    row: the bad reply (``"weight": 0`` there) is context, even listed as a target; the good turn is
    learned, whole-run and step by step."""
    [row] = rows_of(after_a_bad_reply(), weather_machine())
    said = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant"]
    assert row["messages"][said[0]] == {"role": "assistant", "content": BAD_REPLY, "weight": 0}
    read = TrainExample(messages=row["messages"], tools=row["tools"])
    listed = TrainExample(messages=row["messages"], tools=row["tools"], targets=said)
    assert read.targets == listed.targets == said[1:]
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    for base, sequences_made in zip(models, (1, 2), strict=True):  # the second drops earlier replies
        for example in (read, listed):
            sequences, _ = prepare(base, example)
            assert len(sequences) == sequences_made
            assert (BAD_REPLY in text(base, sequences[0].input_ids)) is (base == models[0])  # context
            taught = "".join(learned(base, s) for s in sequences)
            assert taught == f"{call}<|im_end|>{answer('Paris')}<|im_end|>"


def test_a_template_without_the_prefix_property_trains_each_step_alone(models: tuple[str, str]) -> None:
    base, dropping = models
    sequences, prepared = prepare(dropping, weather())
    assert (prepared.whole_run, prepared.per_step, prepared.sequences) == (0, 1, 2)
    call, reply = sequences
    assert learned(dropping, call).startswith("<tool_call>") and learned(dropping, reply) == (
        f"{answer('Paris')}<|im_end|>"
    )
    assert '"arguments": {"city"' not in text(dropping, reply.input_ids)  # the template dropped the call
    assert prepare(base, weather())[1].renderer != prepared.renderer


def test_max_length_drops_sequences_left_without_a_target(models: tuple[str, str]) -> None:
    base, dropping = models
    (full,), _ = prepare(base, weather())
    (cut,), _ = prepare(base, weather(), max_length=len(full.input_ids) - 3)
    assert len(cut.input_ids) == len(full.input_ids) - 3 and cut.target_tokens == full.target_tokens - 3
    _, none = prepare(base, weather(), max_length=20)
    assert (none.sequences, none.examples, none.dropped) == (0, 0, 1)
    steps, some = prepare(dropping, weather(), max_length=len(prepare(dropping, weather())[0][0].input_ids))
    assert (some.sequences, some.dropped) == (1, 1) and len(steps) == 1
