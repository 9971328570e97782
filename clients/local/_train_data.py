"""Training examples as the local trainer learns them: token ids and labels, rendered through the tokenizer's
chat template by ``machine.runs``' local chat format, exactly as the local harness prompts the model.

A target step is the harness's prompt for it (the conversation before it, rendered with the generation
prompt) followed by the step's reply as the model writes it (its text and tool calls, tokenized on their
own, as generation makes them) and the end-of-turn token that stops generation. Only those reply tokens
carry labels; everything else is -100.

An example trains as ONE sequence (the whole run, rendered up to its last target) where every target step's
prompt-and-reply is a token prefix of that rendering, checked on the example's own tokens: then the one
sequence trains each step on exactly the context it was sampled in. A template that renders history
differently from the prompt (one that drops earlier turns' content) fails the check, and the example becomes
one sequence per target step with its context. Pure Python over a tokenizer: torch is not needed here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from machine.errors import BadInputError

from ._chat_format import FORMAT as LOCAL_CHAT_FORMAT
from ._chat_format import chat_messages as local_chat_messages
from ._chat_format import prompt_text as local_prompt_text

IGNORE = -100
"""The label of a token the loss skips (the prompt, other turns, the template's furniture)."""


@dataclass
class TrainSequence:
    """One training sequence: its token ids and a label per token (the id where it is learned, else -100)."""

    input_ids: list[int]
    labels: list[int]

    @property
    def target_tokens(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE)


@dataclass
class PairSequence:
    """A preference pair as two sequences with the same prompt: the chosen answer's and the rejected's,
    and (once measured, before the first step) the reference model's log-probability of each answer."""

    chosen: TrainSequence
    rejected: TrainSequence
    reference: tuple[float, float] | None = None

    @property
    def input_ids(self) -> list[int]:
        """Both sequences' ids (for counting tokens)."""
        return self.chosen.input_ids + self.rejected.input_ids

    @property
    def target_tokens(self) -> int:
        return self.chosen.target_tokens + self.rejected.target_tokens


@dataclass
class RenderedExample:
    """An example's sequences, and whether it went whole (one sequence with every target in it)."""

    sequences: list[TrainSequence]
    whole_run: bool


def renderer_name(tokenizer: Any) -> str:
    """The rendering's format and the chat template's identity (a hash of its text): a record says both,
    since the same examples through another template are other tokens."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if not isinstance(template, str):
        template = repr(template)
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]
    return f"{LOCAL_CHAT_FORMAT}/chat-template:{digest}"


def end_of_turn(tokenizer: Any, stop_ids: Sequence[int]) -> int:
    """The token that ends an assistant turn in this template (the stop token the harness stops at): the
    last stop token in a rendered one-turn exchange, else the end-of-sequence token."""
    probe = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    ids = _ids(tokenizer, tokenizer.apply_chat_template(probe, tokenize=False))
    stops = set(stop_ids)
    found = [t for t in ids if t in stops]
    if found:
        return found[-1]
    if tokenizer.eos_token_id is None:
        raise BadInputError("the model's tokenizer has no end-of-turn token to learn to stop at")
    return int(tokenizer.eos_token_id)


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass(frozen=True)
class Renderer:
    """Renders examples for one tokenizer; ``end`` is the end-of-turn token appended to each reply."""

    tokenizer: Any
    end: int

    def prompt(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> list[int]:
        """The harness's prompt for the step after ``messages``."""
        return _ids(self.tokenizer, local_prompt_text(self.tokenizer, messages, tools))

    def reply(self, message: Mapping[str, Any]) -> list[int]:
        """An assistant message as the model writes it (its text and calls), then the end of its turn."""
        rendered = local_chat_messages([message])[-1]
        return [*_ids(self.tokenizer, rendered["content"]), self.end]

    def whole(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> list[int]:
        """The conversation rendered closed (no generation prompt)."""
        text = self.tokenizer.apply_chat_template(
            local_chat_messages(messages, tools), tokenize=False, add_generation_prompt=False
        )
        return _ids(self.tokenizer, text)


def _checked_targets(messages: list[dict[str, Any]], targets: Sequence[int], run_id: str) -> list[int]:
    chosen = sorted(set(targets))
    wrong = [t for t in chosen if not 0 <= t < len(messages) or messages[t].get("role") != "assistant"]
    if wrong:
        raise BadInputError(f"example of run {run_id!r}: targets {wrong} are not assistant messages")
    return chosen


def render(
    renderer: Renderer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    targets: Sequence[int],
    *,
    run_id: str = "",
) -> RenderedExample:
    """The example as one whole sequence where every target step is a prefix of it, else one sequence per
    target step (its prompt, then its reply labelled)."""
    chosen = _checked_targets(messages, targets, run_id)
    if not chosen:
        return RenderedExample([], whole_run=False)
    steps = [(renderer.prompt(messages[:t], tools), renderer.reply(messages[t])) for t in chosen]
    whole = renderer.whole(messages[: chosen[-1] + 1], tools)
    if all(whole[: len(p) + len(r)] == p + r for p, r in steps):
        length = len(steps[-1][0]) + len(steps[-1][1])
        ids = whole[:length]  # what the template adds after the last reply is never learned
        labels = [IGNORE] * length
        for prompt, reply in steps:
            labels[len(prompt) : len(prompt) + len(reply)] = reply
        return RenderedExample([TrainSequence(ids, labels)], whole_run=True)
    sequences = [TrainSequence(p + r, [IGNORE] * len(p) + r) for p, r in steps]
    return RenderedExample(sequences, whole_run=False)


def truncated(sequence: TrainSequence, max_length: int | None) -> TrainSequence | None:
    """The sequence cut to its first ``max_length`` tokens; None when the cut leaves nothing to learn."""
    if max_length is None or len(sequence.input_ids) <= max_length:
        return sequence
    cut = TrainSequence(sequence.input_ids[:max_length], sequence.labels[:max_length])
    return cut if cut.target_tokens else None
