"""Planning reads a local model from its files: the light tokenizer renders and counts exactly what the loaded
model's tokenizer does (the same sequences, labels, renderer, stop ids and size, on the tiny model and on
the bundled SmolLM2's conversion), a training is planned without importing torch, and a source whose files
do not say enough (a GGUF file not converted yet, a module only the loaded model has) loads the model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder
from helpers.weather_runs import weather_machine, weather_run

needs_local_stack()

from machine.clients.local import _cache as _local_cache  # noqa: E402
from machine.clients.local import _light as _local_light  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local.trainer import LocalTrainer  # noqa: E402
from machine.learn.train import example_of  # noqa: E402
from machine.training import Prepared, TrainExample, TrainSettings  # noqa: E402

TEXTS = [
    "hello world, the answer is 42",
    "  two  spaces\n\nand newlines\t a tab",
    'émoji 🎉 naïve – “quotes”, #red "red" RED <|im_end|> inside',
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield f"local:{tiny_model_folder(tmp_path_factory.mktemp('tiny') / 'model')}"
    _local_models.forget()


def examples() -> list[TrainExample]:
    weather = example_of(weather_run(), weather_machine())
    assert weather is not None
    chat = TrainExample(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": TEXTS[1]},
            {"role": "assistant", "content": TEXTS[2]},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "bye!"},
        ],
        targets=[2, 4],
    )
    return [weather, chat]


def prepared(base: str, *, loaded: bool, monkeypatch: pytest.MonkeyPatch) -> Prepared:
    with monkeypatch.context() as patched:
        if loaded:
            patched.setattr("machine.clients.local.trainer.light", lambda *_: None)
        return LocalTrainer().prepare(examples(), TrainSettings(base_model=base))


def assert_same(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    shape = _local_light.light(base)
    assert shape is not None
    model = _local_models.load(base)
    assert shape.stop_ids == model.stop_ids
    assert shape.parameters == sum(p.numel() for p in model.model.parameters())
    assert shape.modules <= {name for name, _ in model.model.named_modules()}
    for text in TEXTS:
        assert shape.tokenizer(text)["input_ids"] == list(
            model.tokenizer(text, add_special_tokens=False)["input_ids"]
        )
    read, full = (prepared(base, loaded=flag, monkeypatch=monkeypatch) for flag in (False, True))
    assert read.model_dump() == full.model_dump()
    assert read.sequences == 2 and read.whole_run == 2


def test_the_light_tokenizer_plans_what_the_loaded_model_would(
    tiny: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(tiny, monkeypatch)


def test_the_bundled_model_is_read_from_its_conversion_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    _local_models.load("local:smollm2-135m")  # converts it, where the cache has no copy yet
    assert_same("local:smollm2-135m", monkeypatch)


def test_a_training_is_planned_without_torch(tiny: str, tmp_path: Path) -> None:
    data = [e.model_dump() for e in examples()]
    script = f"""
import json, sys
from machine.clients.local.trainer import LocalTrainer
from machine.training import TrainExample, TrainSettings
examples = [TrainExample.model_validate(e) for e in json.loads(sys.argv[1])]
plan = LocalTrainer().prepare(examples, TrainSettings(base_model={tiny!r}))
print(json.dumps([plan.sequences, plan.tokens, "torch" in sys.modules, "transformers.models" in sys.modules]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(data)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    sequences, tokens, torch_seen, models_seen = json.loads(done.stdout)
    assert sequences == 2 and tokens > 0
    assert not torch_seen and not models_seen


def test_a_gguf_file_not_converted_yet_is_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_local_cache.CACHE_ENV, str(tmp_path / "empty"))
    assert _local_light.light("local:smollm2-135m") is None
    monkeypatch.setenv(_local_cache.CACHE_ENV, "off")
    assert _local_light.light("local:smollm2-135m") is None


def test_a_module_only_the_loaded_model_names_is_checked_on_it(
    tiny: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[Any] = []
    real = _local_models.load
    monkeypatch.setattr("machine.clients.local.trainer.load", lambda *a: loads.append(a) or real(*a))
    settings = TrainSettings(base_model=tiny)
    LocalTrainer().prepare(examples(), settings)
    assert loads == []  # q, k, v and o are in the file's tensors
    LocalTrainer(target_modules=("lm_head",)).prepare(examples(), settings)  # tied: no tensor of its own
    assert len(loads) == 1
    with pytest.raises(Exception, match=r"not layers of .*linear layers are: .*q_proj"):
        LocalTrainer(target_modules=("q_prj",)).prepare(examples(), settings)


def test_a_folder_without_a_chat_template_or_weights_is_loaded(tmp_path: Path, tiny: str) -> None:
    folder = Path(tiny.removeprefix("local:"))
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (copy / name).write_bytes((folder / name).read_bytes())
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("chat_template", None)
    (copy / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert _local_light.light(f"local:{copy}") is None  # no template, no safetensors
