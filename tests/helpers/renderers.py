"""Real renderers that work offline, for the Tinker trainer's tests: Inkling's (tml_v0 over the tokenizer
tml-renderers bundles), and tinker-cookbook's Qwen3 renderer, which drops earlier reasoning from the
history, over the Qwen3 tokenizer tml-renderers bundles (get_tokenizer would download it from the Hub).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

INKLING = "thinkingmachines/Inkling"


class BundledTokenizer:
    """The few Hugging Face tokenizer calls cookbook renderers make (``encode``, ``decode``, the eos
    token), over a tml-renderers tokenizer; special tokens written in text encode to their own ids."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name_or_path = inner, name
        ids = [inner.encode_special(s) for s in inner.special_tokens()]
        self.specials = {inner.decode([i]): i for i in ids}
        ordered = sorted(self.specials, key=len, reverse=True)
        self.splitter = re.compile("(" + "|".join(re.escape(s) for s in ordered) + ")")
        self.eos_token_id = inner.encode_special(inner.eos_token)
        self.eos_token = inner.decode([self.eos_token_id])

    def encode(self, text: str, add_special_tokens: bool = False, **_: Any) -> list[int]:
        ids: list[int] = []
        for piece in self.splitter.split(text):
            if piece in self.specials:
                ids.append(self.specials[piece])
            elif piece:
                ids.extend(self.inner.encode_ordinary(piece))
        return ids

    def decode(self, ids: Any, **_: Any) -> str:
        return str(self.inner.decode(list(ids)))


@functools.cache
def inkling() -> Any:
    """The Rendering the trainer picks for Inkling on its own (cached: building it takes seconds)."""
    from machine.clients.tinker._render import rendering_for

    return rendering_for(INKLING, None)


@functools.cache
def qwen3() -> Any:
    """tinker-cookbook's ``qwen3`` renderer (it strips thinking from earlier assistant turns)."""
    from tinker_cookbook.renderers import get_renderer
    from tml_renderers import tokenizers

    from machine.clients.tinker import Rendering

    tokenizer = BundledTokenizer(tokenizers.Qwen3Tokenizer(), "Qwen/Qwen3-8B")
    return Rendering(name="qwen3", renderer=get_renderer("qwen3", tokenizer))


def decode(rendering: Any, tokens: list[int]) -> str:
    return str(rendering.renderer.tokenizer.decode(tokens))


def weighted_text(rendering: Any, sequence: Any) -> str:
    """The text of a rendered sequence's weighted tokens."""
    tokens = sequence.model_input.to_ints()
    return decode(rendering, [t for t, w in zip(tokens, sequence.weights.tolist(), strict=True) if w > 0])


CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""The prompt format of Qwen3's renderer, as a chat template."""
CHATML_WITH_DEFAULT_SYSTEM = (
    "{% if messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}" + CHATML
)
"""ChatML that writes a system prompt of its own when a conversation has none (Qwen2.5's does)."""


class TemplatedTokenizer(BundledTokenizer):
    """A bundled tokenizer with a chat template, applied as Hugging Face's ``apply_chat_template`` is (with
    jinja2), for the check of a renderer against the sampler's template."""

    def __init__(self, inner: Any, name: str, template: str) -> None:
        super().__init__(inner, name)
        self.chat_template = template

    def apply_chat_template(
        self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = False, **_: Any
    ) -> list[int]:
        import jinja2

        text = jinja2.Template(self.chat_template).render(
            messages=messages, add_generation_prompt=add_generation_prompt
        )
        return self.encode(text)


def qwen3_templated(template: str) -> Any:
    """``qwen3``'s renderer over a tokenizer whose chat template is ``template``."""
    from tinker_cookbook.renderers import get_renderer
    from tml_renderers import tokenizers

    from machine.clients.tinker import Rendering

    tokenizer = TemplatedTokenizer(tokenizers.Qwen3Tokenizer(), "Qwen/Qwen3-8B", template)
    return Rendering(name="qwen3", renderer=get_renderer("qwen3", tokenizer))
