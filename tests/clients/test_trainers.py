"""Trainers by name (``machine.clients.TRAINERS``): the default rule, refusals that name what to do, and each
trainer's extra checked before anything is spent: with the training and local extras' modules made
unimportable, ``machine train`` fails with one error line naming the install, and no run was sampled and no
training record written."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.training import TRAIN_CASES, Counting, make_caps

from machine.clients import TRAINERS, TrainerEntry, TrainerRequest, default_trainer_name, make_trainer
from machine.clients.tinker import TinkerTrainer
from machine.clients.trainers import SAVE_EVERY
from machine.errors import BadInputError
from machine.runs import SQLiteStore

TINKER_MODULES = ("tinker", "tinker_cookbook", "tml_renderers")
LOCAL_MODULES = ("torch", "transformers", "peft", "accelerate", "safetensors")

BLOCKING = """\
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    '''As when the extras are not installed: their modules cannot be found.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

BLOCKED = set(sys.argv[1].split(","))
sys.meta_path.insert(0, Blocked())
from machine.cli import main
sys.argv = ["machine", *sys.argv[2:]]
main()
"""


def test_the_default_is_local_for_a_local_model_and_tinker_otherwise() -> None:
    assert default_trainer_name("local:smollm2-135m") == "local"
    assert default_trainer_name("thinkingmachines/Inkling") == "tinker"
    assert isinstance(make_trainer(None, "thinkingmachines/Inkling"), TinkerTrainer)


def test_an_unknown_trainer_lists_the_trainers() -> None:
    with pytest.raises(BadInputError, match="there is no trainer 'dpo2'; the trainers are: tinker, local"):
        make_trainer("dpo2", "thinkingmachines/Inkling")


def test_a_trainer_asked_for_a_model_it_does_not_train_names_the_one_that_does() -> None:
    refused = r"trains local models .*not 'acme/base'.*the tinker trainer does"
    with pytest.raises(BadInputError, match=refused) as error:
        make_trainer("local", "acme/base")
    assert [fix.value for fix in error.value.fixes] == ["tinker"]
    with pytest.raises(BadInputError, match=r"the local trainer does"):
        make_trainer("tinker", "local:smollm2-135m")


def test_a_registered_trainer_is_made_with_the_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[TrainerRequest] = []
    trainer = Counting()

    def factory(request: TrainerRequest) -> Counting:
        made.append(request)
        return trainer

    monkeypatch.setitem(TRAINERS, "counting", TrainerEntry(factory))
    assert make_trainer("counting", "acme/base", tmp_path) is trainer
    [request] = made
    assert (request.base_model, request.root, request.save_every) == ("acme/base", tmp_path, SAVE_EVERY)


@pytest.mark.parametrize(("name", "base", "extra", "modules"), [
    ("tinker", "thinkingmachines/Inkling", "train", TINKER_MODULES),
    ("local", "local:smollm2-135m", "local", LOCAL_MODULES),
])  # fmt: skip
def test_a_missing_module_of_the_extra_is_named_before_the_factory_runs(
    monkeypatch: pytest.MonkeyPatch, name: str, base: str, extra: str, modules: tuple[str, ...]
) -> None:
    ran: list[str] = []
    entry = replace(TRAINERS[name], make=lambda _request: ran.append("made"))  # type: ignore[arg-type, func-returns-value]
    monkeypatch.setitem(TRAINERS, name, entry)
    monkeypatch.setitem(sys.modules, modules[0], None)  # as when the module cannot be imported
    with pytest.raises(BadInputError, match=rf"needs the {extra} extra, and {modules[0]} is not installed: "):
        make_trainer(name, base)
    assert ran == []
    with pytest.raises(BadInputError, match=rf"pip install 'machine\[{extra}\]'"):
        make_trainer(None, base)


@pytest.mark.parametrize(("model", "extra", "missing"), [
    ("thinkingmachines/Inkling", "train", "tinker, tinker_cookbook, tml_renderers are"),
    ("local:smollm2-135m", "local", "torch, transformers, peft, accelerate, safetensors are"),
])  # fmt: skip
def test_train_without_its_extra_spends_nothing_and_names_the_install(
    tmp_path: Path, model: str, extra: str, missing: str
) -> None:
    root = tmp_path / "ws"
    make_caps(root, model_json=json.dumps({"model": model}).encode())
    rules = [{"match": f"^{c['input']}$", "turns": [{"text": c["input"].upper()}]} for c in TRAIN_CASES]
    (root / "script.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    blocked = ",".join((*TINKER_MODULES, *LOCAL_MODULES))
    args = ["train", "caps", "--samples", "2", "--any-model", "--budget", "5", "--workspace", str(root)]
    args += ["--harness", "scripted", "--script", str(root / "script.json")]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKING, blocked, *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"needs the {extra} extra, and {missing} not installed: pip install 'machine[{extra}]'" in line
    store = root / ".machine" / "store.db"
    assert not store.exists() or not list(SQLiteStore(store).iter_runs("caps"))
    assert not (root / ".machine" / "training").exists()
