"""A local model's files by hash: what a run of a ``local:`` model records as its setup, so a stored run is
reused only while the weights it was made with are the ones loaded now (a checkpoint written again at the
same path, or a model folder replaced, is another setup).

The digest is one sha256 over each file's name, size and contents: the GGUF file, or the files at the top
of the model's folder (hidden ones left out), then the adapter's. It is worked out once per process for
each model, as the model itself is loaded once; a model read from the Hugging Face Hub by id is named by
that id (the Hub's own cache keeps its files), and only its adapter's files are hashed."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from ._models import Source

CHUNK = 1 << 20
"""Bytes read at a time."""

_DIGESTS: dict[Source, str | None] = {}
_LOCK = threading.Lock()


def files_digest(source: Source) -> str | None:
    """One sha256 over the files ``source`` is loaded from (see the module), or None when none can be
    read (a Hub id with no adapter: its id already names it)."""
    with _LOCK:
        if source not in _DIGESTS:
            try:
                _DIGESTS[source] = _digest(source)
            except OSError:  # unreadable here: the run says why when it loads the model
                _DIGESTS[source] = None
        return _DIGESTS[source]


def forget_digests() -> None:
    """Work the digests out again on next use (the models were dropped, their files may have changed)."""
    with _LOCK:
        _DIGESTS.clear()


def _digest(source: Source) -> str | None:
    folder = Path(source.folder)
    files = [folder / source.gguf_file] if source.gguf_file else _top_files(folder)
    if source.adapter is not None:
        files += _top_files(Path(source.adapter))
    if not files:
        return None
    total = hashlib.sha256()
    for path in files:
        total.update(f"{path.name}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as read:
            while chunk := read.read(CHUNK):
                total.update(chunk)
    return total.hexdigest()


def _top_files(folder: Path) -> list[Path]:
    """The files directly in ``folder`` (not hidden), by name; none when it is not a folder here."""
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")), key=str)
