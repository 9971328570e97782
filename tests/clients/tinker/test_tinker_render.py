"""The Tinker trainer's rendering, for real and offline: Inkling's renderer keeps every step's prompt a
token prefix of the whole run, so a tool-using run is one sequence; cookbook's Qwen3 renderer drops
earlier reasoning, so the same run becomes one sequence per step. Failed steps and steps that are not
targets carry no weight either way."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import INKLING, decode, inkling, qwen3, weighted_text
from helpers.weather_runs import (
    ANSWER_REASONING,
    BAD_REPLY,
    CALL_REASONING,
    FAILED_REASONING,
    after_a_bad_reply,
    answer,
    weather_machine,
    weather_run,
)

from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._render import (
    Sequence,
    _last_step,
    _whole,
    conversation,
    extends,
    learning_rate_for,
    render,
    rendering_for,
)
from machine.errors import BadInputError
from machine.learn.train import example_of, rows_of
from machine.training import TrainExample, TrainSettings


def example(**run: Any) -> TrainExample:
    found = example_of(weather_run(**run), weather_machine())
    assert found is not None
    return found


def settings(**changes: Any) -> TrainSettings:
    return TrainSettings(base_model=INKLING, **changes)


def weight(sequence: Sequence) -> float:
    return float(sequence.weights.sum())


def test_a_failed_step_is_not_a_target() -> None:
    ex = example()
    assert ex.targets == [4, 6]  # system, user, failed call (2), its error, the good call (4), result, answer
    assert ex.messages[2]["reasoning_content"] == FAILED_REASONING


def test_the_extension_check_passes_on_inkling_and_fails_on_a_renderer_that_strips_thinking() -> None:
    for rendering, holds in [(inkling(), True), (qwen3(), False)]:
        conv, targets = conversation(example(), rendering.renderer)
        assert extends(rendering, conv, targets, _whole(rendering, conv, targets)) is holds, rendering.name


def test_an_inkling_run_is_one_sequence_with_every_good_step_weighted() -> None:
    prepared = TinkerTrainer(rendering=inkling()).prepare([example()], settings())
    assert (prepared.whole_run, prepared.per_step, prepared.sequences) == (1, 0, 1)
    assert (prepared.renderer, prepared.effort, prepared.learning_rate) == ("tml_v0", 0.9, 2e-4)
    (sequence,) = render(example(), inkling()).sequences
    weighted = weighted_text(inkling(), sequence)
    assert CALL_REASONING in weighted and ANSWER_REASONING in weighted and answer("Paris") in weighted
    whole = decode(inkling(), sequence.model_input.to_ints())
    assert FAILED_REASONING in whole and FAILED_REASONING not in weighted  # context, never a target
    assert "unknown argument" in whole and "unknown argument" not in weighted
    assert "Thinking effort level: 0.9" in whole and '"name":"get_weather"' in whole  # effort, tools


def test_the_whole_sequence_trains_exactly_what_the_steps_would() -> None:
    """Same target tokens as each step alone, on the same context: the one sequence loses nothing."""
    rendering = inkling()
    conv, targets = conversation(example(), rendering.renderer)
    whole = _whole(rendering, conv, targets)
    tokens, weights = whole.model_input.to_ints(), whole.weights.tolist()
    for end in targets:
        step = _last_step(rendering, conv, end)
        step_tokens, step_weights = step.model_input.to_ints(), step.weights.tolist()
        assert tokens[: len(step_tokens)] == step_tokens
        on = [i for i, w in enumerate(step_weights) if w > 0]
        assert all(weights[i] == 1.0 for i in on)
    assert weight(whole) == sum(weight(_last_step(rendering, conv, end)) for end in targets)


def test_a_renderer_that_strips_thinking_gets_one_sequence_per_step() -> None:
    rendering = qwen3()
    prepared = TinkerTrainer(rendering=rendering).prepare([example()], settings())
    assert (prepared.whole_run, prepared.per_step, prepared.sequences) == (0, 1, 2)
    assert prepared.effort is None  # this renderer takes no effort
    first, second = render(example(), rendering).sequences
    assert CALL_REASONING in weighted_text(rendering, first)
    assert answer("Paris") in weighted_text(rendering, second)
    assert CALL_REASONING not in weighted_text(rendering, second)
    # Each step is trained on the context it was sampled in: at the answer, the call's reasoning was gone.
    assert CALL_REASONING not in decode(rendering, second.model_input.to_ints())
    assert prepared.tokens == sum(len(s.model_input.to_ints()) - 1 for s in (first, second))
    for sequence in (first, second):
        assert FAILED_REASONING not in weighted_text(rendering, sequence)


def test_assistant_messages_that_are_not_targets_are_never_weighted() -> None:
    ex = example().model_copy(update={"targets": [6]})
    for rendering in (inkling(), qwen3()):
        (sequence,) = render(ex, rendering).sequences
        weighted = weighted_text(rendering, sequence)
        assert answer("Paris") in weighted
        assert CALL_REASONING not in weighted and "get_weather" not in weighted, rendering.name


def test_a_reply_marked_bad_before_the_good_turn_is_never_weighted() -> None:
    """The exported row of a good turn after a reply the person marked bad, read as the trainer reads a
    row: the bad reply (``"weight": 0`` there) is context, even listed as a target, on either renderer."""
    [row] = rows_of(after_a_bad_reply(), weather_machine())
    said = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant"]
    assert row["messages"][said[0]]["weight"] == 0
    assert all("weight" not in row["messages"][i] for i in said[1:])
    read = TrainExample(messages=row["messages"], tools=row["tools"])
    listed = TrainExample(messages=row["messages"], tools=row["tools"], targets=said)
    assert read.targets == listed.targets == said[1:]
    for example in (read, listed):
        for rendering in (inkling(), qwen3()):
            sequences = render(example, rendering).sequences
            assert BAD_REPLY in decode(rendering, sequences[0].model_input.to_ints())  # context
            weighted = "".join(weighted_text(rendering, s) for s in sequences)
            assert BAD_REPLY not in weighted, rendering.name
            assert "get_weather" in weighted and answer("Paris") in weighted, rendering.name


def test_the_datums_are_tinkers_own_shifted_by_one() -> None:
    from tinker import types

    prepared = TinkerTrainer(rendering=inkling()).prepare([example(), example(city="Oslo")], settings())
    (sequence,) = render(example(), inkling()).sequences
    datum = prepared.data[0]
    assert isinstance(datum, types.Datum)
    tokens = sequence.model_input.to_ints()
    assert datum.model_input.to_ints() == tokens[:-1]
    assert list(datum.loss_fn_inputs["target_tokens"].data) == tokens[1:]
    assert prepared.target_tokens == int(weight(sequence)) + int(
        sum(prepared.data[1].loss_fn_inputs["weights"].data)
    )
    assert prepared.tokens == sum(d.model_input.length for d in prepared.data)


def test_max_length_cuts_sequences_and_drops_those_left_with_no_target() -> None:
    first, _ = render(example(), qwen3()).sequences
    limit = len(first.model_input.to_ints())  # the call's step fits; the answer lies past the cut
    full = TinkerTrainer(rendering=qwen3()).prepare([example()], settings())
    cut = TinkerTrainer(rendering=qwen3()).prepare([example()], settings(max_length=limit))
    assert all(d.model_input.length <= limit for d in full.data[:1] + cut.data)
    assert max(d.model_input.length for d in full.data) > limit
    assert (cut.sequences, full.sequences) == (1, 2)
    assert cut.target_tokens == weight(first) < full.target_tokens


def test_the_effort_is_the_one_the_runs_were_sampled_at() -> None:
    rendering = rendering_for(INKLING, 0.5)
    assert rendering.effort == 0.5
    (sequence,) = render(example(), rendering).sequences
    assert "Thinking effort level: 0.5" in decode(rendering, sequence.model_input.to_ints())


def test_a_run_without_tools_or_failures_renders_too() -> None:
    ex = example(failed_first=False).model_copy(update={"tools": []})
    (sequence,) = render(ex, inkling()).sequences
    assert "tool_declare" not in decode(inkling(), sequence.model_input.to_ints())
    assert CALL_REASONING in weighted_text(inkling(), sequence)


def test_targets_must_be_assistant_messages() -> None:
    with pytest.raises(BadInputError, match=r"targets \[1\] are not assistant messages"):
        render(example().model_copy(update={"targets": [1, 4]}), inkling())


def test_learning_rates() -> None:
    assert learning_rate_for(INKLING, None) == 2e-4
    assert learning_rate_for("thinkingmachines/Inkling:peft:262144", None) == 2e-4
    assert learning_rate_for(INKLING, 1e-5) == 1e-5
    assert learning_rate_for("Qwen/Qwen3.8-27B", None) == pytest.approx(4.6487e-4, rel=1e-3)
    with pytest.raises(BadInputError, match="no default learning rate") as caught:
        learning_rate_for("nobody/NoSuchModel", None)
    assert caught.value.fixes[0].argument == "learning_rate"


def test_a_base_model_without_a_renderer_is_refused() -> None:
    with pytest.raises(BadInputError, match="knows no renderer for base model 'nobody/NoSuchModel'"):
        rendering_for("nobody/NoSuchModel", None)
