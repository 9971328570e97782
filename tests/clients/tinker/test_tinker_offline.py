"""A Tinker base model whose tokenizer lives on the Hugging Face Hub: with the tokenizer in the local cache it
loads at once even when the hub cannot be reached; without it, and the hub out of reach (offline mode, or
an endpoint that refuses connections), training fails at once, naming the tokenizer and how to fetch it,
instead of a minute of retried downloads. Each case runs in a process of its own (the hub client reads its
settings at import), against an endpoint on loopback that refuses every connection: no packet leaves."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.env import clean_env, installed_or_skip

pytest.importorskip("tinker_cookbook")
installed_or_skip("transformers")  # the cases import it in their own processes

QWEN = "Qwen/Qwen3-8B"
LIMIT = 50
"""Seconds the process may take: its imports take several on a slow machine; the hub client's retries
took a minute."""

LOAD = """
import sys
from machine.errors import MachineError
from machine.clients.tinker._render import rendering_for
try:
    rendering = rendering_for(sys.argv[1], None)
except MachineError as error:
    print(f"{type(error).__name__}: {error}")
else:
    print(f"loaded {rendering.name}")
"""


@pytest.fixture
def refused() -> Iterator[str]:
    """An endpoint on loopback that refuses every connection (a port bound and never listened on)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def load(model: str, home: Path, **env: str) -> str:
    """What loading ``model``'s renderer in a fresh process says (offline only where ``env`` says so:
    the renderer helpers set HF_HUB_OFFLINE in this process)."""
    settings = clean_env({"HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1"})
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        settings.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", LOAD, model],
        capture_output=True, text=True, timeout=LIMIT, env={**settings, **env}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def say_what_to_fetch(out: str) -> None:
    assert out.startswith("TrainingError: "), out
    assert f"the tokenizer of base model {QWEN!r}" in out and f"hf download {QWEN}" in out, out
    assert "HF_HOME" in out, out


@pytest.mark.slow
def test_offline_a_missing_tokenizer_fails_at_once_naming_what_to_fetch(tmp_path: Path, refused: str) -> None:
    out = load(QWEN, tmp_path / "hf", HF_HUB_OFFLINE="1", HF_ENDPOINT=refused)
    say_what_to_fetch(out)
    assert "offline" in out


@pytest.mark.slow
def test_with_the_hub_out_of_reach_a_missing_tokenizer_fails_at_once(tmp_path: Path, refused: str) -> None:
    out = load(QWEN, tmp_path / "hf", HF_ENDPOINT=refused)
    say_what_to_fetch(out)
    assert refused.removeprefix("http://") in out


def cache_tokenizer(home: Path, repo: str) -> None:
    """``repo``'s tokenizer and config in the Hugging Face cache under ``home``, as a download leaves them
    (the tiny tokenizer the local tests train, with Qwen's chat markers)."""
    from helpers.tiny_model import tiny_tokenizer
    from transformers import LlamaConfig

    commit = "0" * 40
    cached = home / "hub" / f"models--{repo.replace('/', '--')}"
    (cached / "refs").mkdir(parents=True)
    (cached / "refs" / "main").write_text(commit, encoding="utf-8")
    tiny_tokenizer().save_pretrained(cached / "snapshots" / commit)
    LlamaConfig(vocab_size=400, hidden_size=32, num_hidden_layers=1).save_pretrained(
        cached / "snapshots" / commit
    )


@pytest.mark.slow
def test_a_cached_tokenizer_loads_at_once_with_the_hub_out_of_reach(tmp_path: Path, refused: str) -> None:
    cache_tokenizer(tmp_path / "hf", QWEN)
    out = load(QWEN, tmp_path / "hf", HF_ENDPOINT=refused)
    assert out.startswith("loaded qwen3"), out
