"""The Hugging Face Hub, as a trainer or a local model reaches it for a tokenizer: the local cache is looked
in first, and the hub is tried once, with a short connect. When the files are cached and the hub is out
of reach, they load offline at once (the hub client would retry its checks for a minute first); when they
are not cached and the hub is out of reach, the caller fails at once, saying what to fetch and how.

``huggingface_hub`` is imported inside the functions: it comes with the training and local extras."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "tokenizer.model")
"""Any of these in a cached snapshot of a repository means its tokenizer was downloaded."""
CONNECT_TIMEOUT_S = 3.0
"""How long the one connection that tells whether the hub is reachable may take."""


@dataclass(frozen=True)
class HubAccess:
    """Whether a repository's files can be had here: from the cache, or from the hub."""

    repo: str
    cached: bool
    offline: bool
    """``HF_HUB_OFFLINE`` is set: the hub is not tried."""
    reachable: bool
    endpoint: str
    cache: str

    @property
    def available(self) -> bool:
        return self.cached or self.reachable

    def why(self) -> str:
        """Why the hub cannot be used, in words."""
        if self.offline:
            return "the Hugging Face Hub is not tried (HF_HUB_OFFLINE is set: offline mode)"
        return f"the Hugging Face Hub at {self.endpoint} cannot be reached"

    def advice(self) -> str:
        """How to get the files here."""
        return (
            f"on a machine with internet, fetch it with `hf download {self.repo}` (or `huggingface-cli "
            f"download {self.repo}`) and copy its cache folder here, or set HF_HOME to a cache that holds "
            f"it (the cache looked in is {self.cache})"
        )


def _cached(cache: Path, repo: str, files: Sequence[str]) -> bool:
    from huggingface_hub.file_download import repo_folder_name

    snapshots = cache / repo_folder_name(repo_id=repo, repo_type="model") / "snapshots"
    return snapshots.is_dir() and any((s / f).is_file() for s in snapshots.iterdir() for f in files)


def _reachable(endpoint: str) -> bool:
    """Whether a connection to the hub's endpoint opens (one try, a short timeout, nothing sent)."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        import socket  # only when a trainer or a local model needs the hub

        with socket.create_connection((parts.hostname or "", port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def hub_access(repo: str, files: Sequence[str] = TOKENIZER_FILES) -> HubAccess:
    """Where ``repo``'s ``files`` could come from here: the cache (any snapshot) and whether the hub
    answers (not tried in offline mode)."""
    from huggingface_hub import constants

    offline = bool(constants.HF_HUB_OFFLINE)
    cache = Path(constants.HF_HUB_CACHE)
    return HubAccess(
        repo=repo,
        cached=_cached(cache, repo, files),
        offline=offline,
        reachable=not offline and _reachable(constants.ENDPOINT),
        endpoint=constants.ENDPOINT,
        cache=str(cache),
    )


@contextmanager
def offline_hub(on: bool) -> Iterator[None]:
    """While the block runs, with ``on``, the hub client reads its cache only and tries no download (as
    under ``HF_HUB_OFFLINE=1``); the setting is put back after."""
    if not on:
        yield
        return
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before
