"""A tiny causal language model made on the spot, with no download: a byte-level BPE tokenizer trained on a
few lines of text, wrapped with a ChatML chat template, and a two-layer Llama of about 100 k parameters.
Saved as a Hugging Face model folder, so it loads through the same ``local:PATH`` code as a real model.

Also: ``steer``, which makes a loaded model's ``generate`` write given replies (the real ``generate``, with a
logits processor that leaves only the next scripted token possible), since so small a model can be made
to call a tool by nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "A tool call names a tool and gives it arguments as JSON.",
    '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>',
    '<tool_response name="add">\n3\n</tool_response>',
    "You are a helpful assistant. Answer briefly and end with a sign-off.",
    "hello world, the answer is 42, thanks, bye!",
    "0123456789 {}[]\":,._-+*/=<>!?'",
]


def tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained here, with ChatML special tokens and a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(TEXT * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        chat_template=CHAT_TEMPLATE,
    )


def tiny_model_folder(folder: Path, *, seed: int = 0, context: int = 2048) -> Path:
    """A tiny Llama reading ``context`` tokens, and its tokenizer, saved in ``folder`` (made if missing);
    returns ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


class _Force:
    """Leaves only the next token of ``tokens`` possible at each step (then the end of the turn)."""

    def __init__(self, rows: list[list[int]], start: int, end: int) -> None:
        self.rows, self.start, self.end = rows, start, end

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        made = input_ids.shape[1] - self.start
        forced = torch.full_like(scores, float("-inf"))
        for row, tokens in enumerate(self.rows):
            forced[row, tokens[made] if made < len(tokens) else self.end] = 0.0
        return forced


def steer(loaded: Any, replies: Callable[[str], str]) -> list[int]:
    """Make ``loaded.model.generate`` write ``replies(prompt)`` for each row's prompt (decoded), through the
    real ``generate``. Returns a list that grows by each call's batch size, to count calls."""
    real = loaded.model.generate
    tokenizer = loaded.tokenizer
    calls: list[int] = []

    def generate(*, input_ids: Any, attention_mask: Any, logits_processor: Any, **kwargs: Any) -> Any:
        prompts = [
            tokenizer.decode([t for t, m in zip(row, keep, strict=True) if m])
            for row, keep in zip(input_ids.tolist(), attention_mask.tolist(), strict=True)
        ]
        rows = [tokenizer(replies(p), add_special_tokens=False)["input_ids"] for p in prompts]
        logits_processor.append(_Force(rows, input_ids.shape[1], loaded.stop_ids[0]))
        calls.append(len(prompts))
        return real(
            input_ids=input_ids, attention_mask=attention_mask, logits_processor=logits_processor, **kwargs
        )

    loaded.model.generate = generate
    return calls


@contextmanager
def restored(loaded: Any) -> Iterator[None]:
    """Put ``loaded.model.generate`` back as it was when the block ends, whatever it was made (``steer``)."""
    real = loaded.model.generate
    try:
        yield
    finally:
        loaded.model.generate = real


@contextmanager
def counting(loaded: Any) -> Iterator[list[int]]:
    """Count ``generate`` calls (each call's batch size) without changing what it makes."""
    real = loaded.model.generate
    calls: list[int] = []

    def generate(**kwargs: Any) -> Any:
        calls.append(int(kwargs["input_ids"].shape[0]))
        return real(**kwargs)

    with restored(loaded):
        loaded.model.generate = generate
        yield calls


def needs_local_stack() -> None:
    """Skip the calling test module where torch and transformers are not installed, except under CI
    (``make test`` installs them there, so their absence is a failure). They are looked up, not imported:
    importing them takes seconds, which every collection of the tests would pay."""
    from helpers.env import installed_or_skip

    installed_or_skip("torch", "transformers")
