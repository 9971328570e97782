"""A local model's tokenizer and shape read from its files alone, without torch or its weights.

Planning a training (``train --dry-run``, and the plan every training prints first) renders every example
to tokens and checks the adapter's target modules. Loading the model for that costs the import of torch and
transformers' model code and the weights themselves (seconds), while the tokenizer file, the chat template
and the safetensors header say all of it. A Hugging Face folder (a GGUF file's converted copy in the cache
included) is read here: ``tokenizers`` encodes as the fast tokenizer does, transformers' own template
renderer (imported without torch) renders with the same special tokens, the stop ids come from the same
configs, and the linear layers and parameter count from the tensors' names and shapes. A source this cannot
read (a Hub id, a GGUF file not converted yet, a template per tool use) gives None, and the model is loaded.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._cache import cached_folder, converted
from ._models import Source, resolve

NAMED = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
"""The special tokens a tokenizer hands its chat template by name (transformers' ``special_tokens_map``)."""
HEADER_LIMIT = 100_000_000
"""The largest safetensors header read (a file claiming more is not read here)."""


@dataclass(frozen=True)
class LightTokenizer:
    """The part of a fast tokenizer that training data is rendered with: its template and its ids."""

    backend: Any
    chat_template: str
    named: Mapping[str, str]

    @property
    def eos_token_id(self) -> int | None:
        return self.id_of(self.named.get("eos_token"))

    @property
    def unk_token_id(self) -> int | None:
        return self.id_of(self.named.get("unk_token"))

    def id_of(self, token: str | None) -> int | None:
        found = None if token is None else self.backend.token_to_id(token)
        return None if found is None else int(found)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        found = self.id_of(token)
        return self.unk_token_id if found is None else found

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(self.backend.encode(text, add_special_tokens=add_special_tokens).ids)}

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        tokenize: bool = False,
        add_generation_prompt: bool = False,
    ) -> str:
        from transformers.utils import chat_template_utils

        if tokenize:
            raise ValueError("the light tokenizer renders text; encode it with a call")
        renderer: Any = chat_template_utils.render_jinja_template  # typed as returning str; it returns a pair
        rendered, _ = renderer(
            conversations=[[dict(message) for message in conversation]],
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            **self.named,
        )
        return str(rendered[0])


@dataclass(frozen=True)
class LightModel:
    """What planning needs of a local model: its tokenizer, stop ids, modules and size."""

    model_id: str
    tokenizer: LightTokenizer
    stop_ids: list[int]
    modules: frozenset[str]
    """The modules that hold parameters (a layer without any, a rotary embedding, is not among them)."""
    parameters: int


def light(model_id: str, root: Path | None = None) -> LightModel | None:
    """``model_id`` read from its files, or None when they do not say enough (then load the model)."""
    folder = _folder(resolve(model_id, root).base)
    return None if folder is None else _read(str(folder), model_id)


def _folder(source: Source) -> Path | None:
    """The Hugging Face folder a base's files are in: the folder itself, or a GGUF file's conversion (under
    either dtype's key: the tokenizer and shapes are the same)."""
    if source.gguf_file is None:
        folder = Path(source.folder)
        return folder if (folder / "config.json").is_file() else None
    gguf = Path(source.folder, source.gguf_file)
    for dtype in ("torch.float32", "torch.bfloat16"):
        done = converted(cached_folder(gguf, dtype))
        if done is not None:
            return done
    return None


def _read(folder: str, model_id: str) -> LightModel | None:
    at = Path(folder)
    try:
        tokenizer = _tokenizer(at)
        shapes = _shapes(at)
    except (OSError, ValueError, KeyError, struct.error):
        return None
    if tokenizer is None or shapes is None:
        return None
    modules = {module for name in shapes for module in _inside(name)}
    size = sum(math.prod(shape) for shape in shapes.values())
    return LightModel(model_id, tokenizer, _stop_ids(at, tokenizer), frozenset(modules), size)


def _inside(name: str) -> list[str]:
    """The modules a parameter is in: ``a.b.weight`` is in ``a`` and in ``a.b``."""
    parts = name.split(".")[:-1]
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _tokenizer(at: Path) -> LightTokenizer | None:
    from tokenizers import Tokenizer

    config = json.loads((at / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = config.get("chat_template")
    if template is None and (at / "chat_template.jinja").is_file():
        template = (at / "chat_template.jinja").read_text(encoding="utf-8")
    if not isinstance(template, str) or not (at / "tokenizer.json").is_file():
        return None
    named: dict[str, str] = {}
    for key in NAMED:
        value = config.get(key)
        value = value.get("content") if isinstance(value, dict) else value
        if isinstance(value, str):
            named[key] = value
    return LightTokenizer(Tokenizer.from_file(str(at / "tokenizer.json")), template, named)


def _shapes(at: Path) -> dict[str, list[int]] | None:
    """Every tensor's shape from the safetensors headers (one file, or the shards an index names)."""
    single = at / "model.safetensors"
    if single.is_file():
        files = [single]
    elif (at / "model.safetensors.index.json").is_file():
        index = json.loads((at / "model.safetensors.index.json").read_text(encoding="utf-8"))
        files = [at / shard for shard in sorted(set(index["weight_map"].values()))]
    else:
        return None
    shapes: dict[str, list[int]] = {}
    for file in files:
        with file.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > HEADER_LIMIT:
                return None
            header = json.loads(handle.read(length))
        shapes.update({k: list(v["shape"]) for k, v in header.items() if k != "__metadata__"})
    return shapes


def _stop_ids(at: Path, tokenizer: LightTokenizer) -> list[int]:
    """The ids that end a turn, from the same places as a loaded model's: the generation config's end of
    sequence (else the model config's), the tokenizer's, and ChatML's end of turn."""
    found: list[int] = []
    generation = at / "generation_config.json"
    config = json.loads((generation if generation.is_file() else at / "config.json").read_text("utf-8"))
    configured = config.get("eos_token_id")
    found.extend(configured if isinstance(configured, list) else [] if configured is None else [configured])
    if tokenizer.eos_token_id is not None:
        found.append(tokenizer.eos_token_id)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if end is not None and end != tokenizer.unk_token_id and end >= 0:
        found.append(end)
    return sorted(set(found))
