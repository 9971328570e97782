"""Examples as Tinker trains on them: rendered to tokens by tinker-cookbook's renderer for the base model,
with a weight on every token the model should learn to write.

A tool-using run is ONE sequence with every target step weighted only where that is the same as training
each step on its own: each target step's prompt, and the prompt with the step as it was sampled, must be
token prefixes of the whole run's rendering. A renderer that rewrites history (one that drops earlier
reasoning) fails that, and the run becomes one sequence per target step with the context before it. The
check is made on each example's own tokens, not assumed from the renderer's name.

tinker, tinker_cookbook and torch are imported inside the functions: ``import machine`` stays light.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine.errors import BadInputError, Fix, TrainingError
from machine.training import TrainExample

from .._hub import hub_access, offline_hub

DEFAULT_EFFORT = 0.9
"""The effort an Inkling run is sampled at unless told otherwise (tinker-cookbook's default for tml_v0)."""

INKLING_RENDERER = "tml_v0"
"""The renderer of Inkling models, which Tinker's sampler renders with too."""
INKLING_LEARNING_RATE = 2e-4
"""LoRA learning rate for Inkling models, which tinker-cookbook's ``get_lr`` has no formula for."""

LEARNING_RATE = Fix("learning_rate", "2e-4", "to choose the learning rate")
BUNDLED_TOKENIZERS = ("thinkingmachines/Inkling",)
"""Base models whose tokenizer tml-renderers bundles: no download."""
LLAMA3_TOKENIZER = "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer"
"""Where tinker-cookbook loads every Llama 3 tokenizer from (the originals are gated)."""


@dataclass(frozen=True)
class Rendering:
    """A cookbook renderer for one base model, and the effort it renders at (None: it takes none)."""

    name: str
    renderer: Any
    effort: float | None = None

    def options(self) -> dict[str, Any]:
        """The keyword arguments every render call passes (the effort, where the renderer takes one)."""
        return {} if self.effort is None else {"effort": self.effort}


@dataclass
class Sequence:
    """One training sequence: its tokens (a ``tinker.ModelInput``) and a weight per token (a torch
    tensor), as the cookbook renderer builds them, before the shift into a Datum."""

    model_input: Any
    weights: Any


@dataclass
class RenderedExample:
    """An example's sequences, and whether it went whole (one sequence, every target in it)."""

    sequences: list[Sequence]
    whole_run: bool


def takes_effort(renderer: Any) -> bool:
    """Whether the renderer's supervised rendering takes an ``effort`` (tml_v0 does; most do not)."""
    return "effort" in inspect.signature(renderer.build_supervised_example).parameters


def rendering_for(base_model: str, effort: float | None) -> Rendering:
    """The renderer tinker-cookbook recommends for ``base_model``, over the model's own tokenizer (for
    Inkling, the one tml-renderers bundles, so no download)."""
    from tinker_cookbook import model_info
    from tinker_cookbook.renderers import get_renderer

    try:
        name = model_info.get_recommended_renderer_name(base_model)
    except (KeyError, ValueError, NotImplementedError) as error:
        raise BadInputError(
            f"tinker-cookbook knows no renderer for base model {base_model!r} ({error}); "
            "train a base model Tinker serves"
        ) from None
    renderer = get_renderer(name, tokenizer_for(base_model))
    chosen = (DEFAULT_EFFORT if effort is None else effort) if takes_effort(renderer) else None
    return Rendering(name=name, renderer=renderer, effort=chosen)


def hub_repo(base_model: str) -> str | None:
    """The Hugging Face repository tinker-cookbook's ``get_tokenizer`` loads ``base_model``'s tokenizer
    from (its own choices, mirrored), or None when it needs none: a tokenizer registered with it, the
    one tml-renderers bundles for Inkling, or a local folder."""
    from tinker_cookbook.tokenizer_utils import is_tokenizer_registered

    name = base_model.split(":", 1)[0]
    if is_tokenizer_registered(base_model) or name.startswith(BUNDLED_TOKENIZERS) or Path(name).is_dir():
        return None
    return LLAMA3_TOKENIZER if name.startswith("meta-llama/Llama-3") else name


def tokenizer_for(base_model: str) -> Any:
    """The tokenizer of ``base_model``, from the local Hugging Face cache when it is there (offline, at
    once, when the hub cannot be reached), else from the hub; when it is neither cached nor reachable,
    a TrainingError at once that says what to fetch (the hub client would retry for a minute)."""
    from tinker_cookbook.tokenizer_utils import get_tokenizer

    repo = hub_repo(base_model)
    access = None if repo is None else hub_access(repo)
    if access is not None and not access.available:
        raise TrainingError(
            f"the tokenizer of base model {base_model!r} ({access.repo} on the Hugging Face Hub) is not in "
            f"this machine's Hugging Face cache, and {access.why()}: {access.advice()}"
        )
    try:
        with offline_hub(access is not None and not access.reachable):
            return get_tokenizer(base_model)
    except Exception as error:  # a download refused or failed, a cached copy that does not load
        raise TrainingError(f"could not load the tokenizer of {base_model!r}: {error}") from error


def learning_rate_for(base_model: str, given: float | None) -> float:
    """The learning rate given, else 2e-4 for Inkling, else tinker-cookbook's LoRA rate for the base."""
    if given is not None:
        return given
    if "inkling" in base_model.lower():
        return INKLING_LEARNING_RATE
    from tinker_cookbook.hyperparam_utils import get_lr

    try:
        return float(get_lr(base_model))
    except Exception as error:  # no formula for the family, or its size not readable offline
        raise BadInputError(
            f"tinker-cookbook has no default learning rate for base model {base_model!r} ({error})",
            fixes=[LEARNING_RATE],
        ) from None


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message with its reasoning as a thinking part before its text: the cookbook's converter
    keeps a list of content parts but drops ``reasoning_content``."""
    reasoning = message.get("reasoning_content")
    if message.get("role") != "assistant" or not reasoning:
        return message
    text = message.get("content")
    parts: list[dict[str, Any]] = [{"type": "thinking", "thinking": reasoning}]
    if isinstance(text, str) and text:
        parts.append({"type": "text", "text": text})
    elif isinstance(text, list):
        parts.extend(text)
    return {**message, "content": parts}


def to_cookbook(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], renderer: Any
) -> tuple[list[dict[str, Any]], int]:
    """OpenAI chat messages (system first) and tools as the cookbook's messages: the renderer's own
    prefix for the system prompt and any tools, then the rest converted; and how far each message after
    the system prompt moved (the prefix's length less the system message's)."""
    from tinker_cookbook.third_party.openai_compat import openai_messages_to_tinker, openai_tools_to_tinker

    system = 1 if messages and messages[0].get("role") == "system" else 0
    prompt = str(messages[0].get("content") or "") if system else ""
    if tools:
        prefix = renderer.create_conversation_prefix_with_tools(
            openai_tools_to_tinker(tools), system_prompt=prompt
        )
    else:  # the system prompt as it is: Qwen3's prefix appends a tools separator even with no tools
        prefix = [{"role": "system", "content": prompt}] if prompt else []
    body = openai_messages_to_tinker([_message(m) for m in messages[system:]])
    return [*prefix, *body], len(prefix) - system


def conversation(example: TrainExample, renderer: Any) -> tuple[list[dict[str, Any]], list[int]]:
    """The example as the cookbook's messages (``to_cookbook``), and the positions of its targets in
    them."""
    messages = example.messages
    system = 1 if messages and messages[0].get("role") == "system" else 0
    conv, shift = to_cookbook(messages, example.tools, renderer)
    targets = sorted({t + shift for t in example.targets if t >= system})
    wrong = [t - shift for t in targets if t >= len(conv) or conv[t]["role"] != "assistant"]
    if wrong:
        raise BadInputError(f"example of run {example.run_id!r}: targets {wrong} are not assistant messages")
    return conv, targets


def _tokens(model_input: Any) -> list[int]:
    return list(model_input.to_ints())


def _last_step(rendering: Rendering, conv: list[dict[str, Any]], end: int) -> Sequence:
    """The conversation up to and including the assistant message at ``end``, that message weighted: the
    step with the context the model saw when it sampled it."""
    from tinker_cookbook.renderers import TrainOnWhat

    model_input, weights = rendering.renderer.build_supervised_example(
        conv[: end + 1], train_on_what=TrainOnWhat.LAST_ASSISTANT_MESSAGE, **rendering.options()
    )
    return Sequence(model_input, weights)


def _whole(rendering: Rendering, conv: list[dict[str, Any]], targets: list[int]) -> Sequence:
    """The conversation up to its last target, every target weighted and nothing else."""
    from tinker_cookbook.renderers import TrainOnWhat

    chosen = set(targets)
    flagged = [{**m, "trainable": i in chosen} for i, m in enumerate(conv[: targets[-1] + 1])]
    model_input, weights = rendering.renderer.build_supervised_example(
        flagged, train_on_what=TrainOnWhat.CUSTOMIZED, **rendering.options()
    )
    return Sequence(model_input, weights)


def extends(rendering: Rendering, conv: list[dict[str, Any]], targets: list[int], whole: Sequence) -> bool:
    """Whether every target step's generation prompt, and that prompt with the step as it was sampled,
    are token prefixes of the whole rendering: then the one sequence trains each step on exactly the
    context it was sampled in."""
    tokens = _tokens(whole.model_input)
    for end in targets:
        prompt = _tokens(rendering.renderer.build_generation_prompt(conv[:end], **rendering.options()))
        step = _tokens(_last_step(rendering, conv, end).model_input)
        if tokens[: len(prompt)] != prompt or tokens[: len(step)] != step:
            return False
    return True


def render(example: TrainExample, rendering: Rendering) -> RenderedExample:
    """The example as one whole sequence where the extension check holds for it, else one sequence per
    target step."""
    conv, targets = conversation(example, rendering.renderer)
    if not targets:
        return RenderedExample(sequences=[], whole_run=False)
    whole = _whole(rendering, conv, targets)
    if extends(rendering, conv, targets, whole):
        return RenderedExample(sequences=[whole], whole_run=True)
    return RenderedExample(sequences=[_last_step(rendering, conv, end) for end in targets], whole_run=False)


def template_check(rendering: Rendering, examples: Iterable[TrainExample]) -> tuple[str, bool]:
    """Whether the renderer writes the prompt the sampler will: Tinker's OpenAI-compatible endpoint
    samples a checkpoint on the base model's own chat template, so a renderer that differs from it trains
    the model on prompts it is never shown. The generation prompt of the first target step is compared,
    token for token, for the first example and the first with tools. Returns the finding in words and
    whether they differ; Inkling's sampler renders with the same renderer, so it is not compared."""
    if rendering.name == INKLING_RENDERER:
        return "", False
    tokenizer = getattr(rendering.renderer, "tokenizer", None)
    if not getattr(tokenizer, "chat_template", None):
        return f"renderer {rendering.name}: the tokenizer has no chat template to check it against", False
    checked = 0
    for example in _shapes(examples):
        differs = _differs(rendering, tokenizer, example)
        if differs:
            return f"renderer {rendering.name} differs from the base model's chat template: {differs}", True
        checked += 1
    return (
        f"renderer {rendering.name}: token for token the chat template's ({checked} prompts checked)",
        False,
    )


def _shapes(examples: Iterable[TrainExample]) -> list[TrainExample]:
    """The first example with a target, and the first with tools when that is another."""
    chosen: dict[bool, TrainExample] = {}
    for example in examples:
        if example.targets:
            chosen.setdefault(bool(example.tools), example)
        if len(chosen) == 2:
            break
    return list(chosen.values())


def _differs(rendering: Rendering, tokenizer: Any, example: TrainExample) -> str:
    """Where the renderer's prompt for the example's first target step leaves the template's, in words
    ("" where they agree)."""
    conv, targets = conversation(example, rendering.renderer)
    ours = _tokens(rendering.renderer.build_generation_prompt(conv[: targets[0]], **rendering.options()))
    first = min(example.targets)
    made = tokenizer.apply_chat_template(
        example.messages[:first], tools=example.tools or None, add_generation_prompt=True, tokenize=True
    )
    theirs = list(made["input_ids"] if hasattr(made, "keys") else made)  # a BatchEncoding, or the ids
    if ours == theirs:
        return ""
    at = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs))
    )
    shown = [repr(tokenizer.decode(t[max(0, at - 6) : at + 10])) for t in (ours, theirs)]
    return (
        f"run {example.run_id}'s prompt ({len(ours)} tokens rendered, {len(theirs)} by the template) "
        f"parts at token {at}: the renderer writes {shown[0]}, the template {shown[1]}"
    )
