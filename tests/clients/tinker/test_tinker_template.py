"""Before the first step, the Tinker trainer checks that its renderer writes the prompt the sampler will:
Tinker's OpenAI-compatible endpoint samples a checkpoint on the base model's chat template. A renderer
that agrees says so in the plan; one that parts from it (here: a template that adds a system prompt of its
own) is named with the token where they part, and train refuses the plan unless forced."""

from __future__ import annotations

import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import CHATML, CHATML_WITH_DEFAULT_SYSTEM, qwen3, qwen3_templated

from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._render import template_check
from machine.errors import BadInputError
from machine.learn import TrainOptions
from machine.learn.train._schedule import refuse_short, schedule
from machine.training import TrainExample, TrainSettings

BASE = "Qwen/Qwen3-8B"


def example(*, system: bool = True) -> TrainExample:
    said = [{"role": "user", "content": "What colour is the sky?"}, {"role": "assistant", "content": "Blue."}]
    head = [{"role": "system", "content": "Answer briefly."}] if system else []
    return TrainExample(messages=[*head, *said], targets=[len(head) + 1], run_id="r1")


def test_a_renderer_that_writes_the_templates_prompt_says_so_in_the_plan() -> None:
    rendering = qwen3_templated(CHATML)
    assert template_check(rendering, [example(), example(system=False)]) == (
        "renderer qwen3: token for token the chat template's (1 prompts checked)",
        False,
    )
    prepared = TinkerTrainer(rendering=rendering).prepare(
        [example()] * 40, TrainSettings(base_model=BASE, learning_rate=1e-4)
    )
    plan = schedule(prepared, TrainOptions(), BASE, price=None)
    assert "  renderer qwen3: token for token the chat template's (1 prompts checked)" in plan.lines()
    refuse_short(plan, TrainOptions())  # 40 sequences, batch and epochs to 30 steps: nothing to refuse


def test_a_renderer_that_parts_from_the_template_is_refused_unless_forced() -> None:
    rendering = qwen3_templated(CHATML_WITH_DEFAULT_SYSTEM)
    said, differs = template_check(rendering, [example(system=False)])
    assert differs
    assert said.startswith("renderer qwen3 differs from the base model's chat template: run r1's prompt (")
    assert "parts at token 1: the renderer writes '<|im_start|>user" in said
    assert "the template '<|im_start|>system\\nYou are a helpful assistant." in said
    assert template_check(rendering, [example()]) == (  # with a system prompt of its own, they agree
        "renderer qwen3: token for token the chat template's (1 prompts checked)",
        False,
    )
    prepared = TinkerTrainer(rendering=rendering).prepare(
        [example(system=False)] * 40, TrainSettings(base_model=BASE, learning_rate=1e-4)
    )
    plan = schedule(prepared, TrainOptions(), BASE, price=None)
    with pytest.raises(BadInputError, match="would be sampled on others") as refused:
        refuse_short(plan, TrainOptions())
    assert [(f.argument, f.value) for f in refused.value.fixes] == [("force", None)]
    refuse_short(plan, TrainOptions(force=True))


def test_a_tokenizer_without_a_template_cannot_be_checked_and_says_so() -> None:
    assert template_check(qwen3(), [example()]) == (
        "renderer qwen3: the tokenizer has no chat template to check it against",
        False,
    )
