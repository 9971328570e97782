"""GGUF models converted once: reading a GGUF file means parsing and dequantizing every tensor (about 16 s
for the bundled SmolLM2 on two cores, in every process that loads it), while the same weights saved as a
Hugging Face folder load in about a second. So the first load of a GGUF file saves what it made (the
model as loaded, its tokenizer and chat template) under the cache, and later loads read that folder.

The tokenizer is read back as ``PreTrainedTokenizerFast`` over the saved ``tokenizer.json`` (the
same ids, special tokens and chat template as the GGUF's, checked on the bundled model). The cache is
``MACHINE_LOCAL_CACHE`` (``off`` turns it off), else ``$XDG_CACHE_HOME/machine/local-models`` (``~/.cache``
by default). A folder is named by the file's path, size and modification time, the dtype
and the transformers version, so a changed file or another converter is converted again; it is written
under a temporary name and renamed into place, so a process never reads a half-written one, and a cache
that cannot be written only costs the next load its speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

CACHE_ENV = "MACHINE_LOCAL_CACHE"
COMPLETE = "converted-from.txt"
"""Written last in a cached folder: the GGUF file it was made from (a folder without it is ignored)."""


def cache_root() -> Path | None:
    """Where converted models are kept, or None when the cache is off."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "machine" / "local-models"


def cached_folder(gguf: Path, dtype: str) -> Path | None:
    """The folder the converted ``gguf`` (loaded as ``dtype``) is kept in, or None when the cache is off."""
    root = cache_root()
    if root is None:
        return None
    seen = gguf.stat()
    identity = f"{gguf.resolve()}|{seen.st_size}|{seen.st_mtime_ns}|{dtype}|{version('transformers')}"
    return root / f"{gguf.stem}-{hashlib.sha256(identity.encode('utf-8')).hexdigest()[:16]}"


def converted(folder: Path | None) -> Path | None:
    """``folder`` when a complete conversion is there."""
    return folder if folder is not None and (folder / COMPLETE).is_file() else None


def _as_saved(config_file: Path) -> None:
    """Read the tokenizer back as the file says: a GGUF tokenizer comes out as a class (CodeLlama's for
    SmolLM2) whose loader rebuilds the pre-tokenizer its own way and would split text differently."""
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_file.write_text(json.dumps(config, indent=2), encoding="utf-8")


def keep(folder: Path, model: Any, tokenizer: Any, gguf: Path) -> None:
    """Save ``model`` and ``tokenizer`` as ``folder``, written aside then renamed; a failure (a full disk,
    a read-only home, another process first) leaves no folder and is not an error."""
    made: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        model.save_pretrained(made)
        tokenizer.save_pretrained(made)
        _as_saved(made / "tokenizer_config.json")
        (made / COMPLETE).write_text(str(gguf.resolve()) + "\n", encoding="utf-8")
        os.rename(made, folder)
        made = None
    except OSError:
        pass
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
