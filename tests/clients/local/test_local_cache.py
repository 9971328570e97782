"""A GGUF model is converted once: the first load keeps the model and tokenizer it made in the cache, and
the next load reads that folder instead of parsing the GGUF file again, with the same tokens, the same
chat template and the same greedy reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.tiny_model import needs_local_stack

needs_local_stack()

from machine.clients.local import _cache as _local_cache  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._models import Source, bundled_file  # noqa: E402

TEXTS = [
    "Say hello and name a colour.",
    "  two  spaces\n\nand newlines\t a tab",
    'Adding.\n<tool_call>{"name": "red_mentioned", "arguments": {}}</tool_call>',
    'émoji 🎉 naïve – “quotes”, #red "red" RED',
]


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(_local_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _local_cache.cache_root() == tmp_path / "xdg" / "machine" / "local-models"
    monkeypatch.setenv(_local_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert _local_cache.cache_root() == tmp_path / "mine"
    monkeypatch.setenv(_local_cache.CACHE_ENV, "off")
    assert _local_cache.cache_root() is None
    assert _local_cache.cached_folder(tmp_path, "torch.float32") is None


def test_a_changed_file_is_converted_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_local_cache.CACHE_ENV, str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"one")
    first = _local_cache.cached_folder(gguf, "torch.float32")
    assert first != _local_cache.cached_folder(gguf, "torch.bfloat16")
    gguf.write_bytes(b"three")
    assert _local_cache.cached_folder(gguf, "torch.float32") != first


def test_a_conversion_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    class Failing:
        def save_pretrained(self, folder: Path) -> None:
            (Path(folder) / "model.safetensors").write_bytes(b"half")
            raise OSError("No space left on device")

    folder = tmp_path / "cache" / "m-0123"
    _local_cache.keep(folder, Failing(), Failing(), tmp_path / "m.gguf")
    assert not folder.exists() and list((tmp_path / "cache").iterdir()) == []
    assert _local_cache.converted(folder) is None


@pytest.mark.slow
def test_the_bundled_model_loads_from_its_conversion_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv(_local_cache.CACHE_ENV, str(tmp_path / "cache"))
    path = bundled_file("smollm2-135m")
    source = Source(str(path.parent), path.name)
    read: list[Any] = []
    real = AutoModelForCausalLM.from_pretrained

    def spy(folder: str, **options: Any) -> Any:
        read.append((folder, options.get("gguf_file")))
        return real(folder, **options)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spy)
    seen = []
    for _load in range(2):
        model, tokenizer = _local_models._load_base(source, "cpu")
        messages = [{"role": "user", "content": TEXTS[0]}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            reply = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)[0].tolist()
        tokens = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in TEXTS]
        seen.append((tokens, ids, reply, tokenizer.chat_template, tokenizer.eos_token_id, len(tokenizer)))
    kept = _local_cache.cached_folder(path, "torch.float32")
    assert kept is not None and _local_cache.converted(kept) == kept
    assert read == [(str(path.parent), path.name), (str(kept), None)]  # the GGUF file was parsed once
    assert seen[0] == seen[1]
