"""A local model named by its Hugging Face Hub id that is not in the local cache, on a machine that cannot
reach the hub, fails at once, naming the model and how to fetch it (no download is tried: offline mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tiny_model import needs_local_stack

needs_local_stack()

from machine.clients.local import _models as _local_models  # noqa: E402
from machine.errors import HarnessError  # noqa: E402


def test_an_uncached_hub_model_offline_fails_naming_what_to_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(HarnessError) as refused:
        _local_models.load("local:SomeOrg/not-cached-model")
    message = str(refused.value)
    assert "'SomeOrg/not-cached-model'" in message and "hf download SomeOrg/not-cached-model" in message
    assert "HF_HUB_OFFLINE" in message and str(tmp_path / "hub") in message
