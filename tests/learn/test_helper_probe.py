"""A local model named as the optimizer or the author is asked once, before anything is measured, for a
short reply in the form its replies are read in; one that writes no such block is refused then, naming the
options that fix it, instead of after the live version has been run on every case."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.env import REPO
from helpers.tiny_model import needs_local_stack, restored, steer, tiny_model_folder

needs_local_stack()

from machine import BadInputError, open_workspace  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.learn import draft_rubric, optimize, specialize  # noqa: E402
from machine.learn._helper_model import INSTRUCTIONS_FORM, check_helper_model  # noqa: E402

NO_FILE = re.escape('its reply held no <file path="..."> block')


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # the helpers' own instructions are long, and this tokenizer spends many tokens on them
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model", context=16384)
    yield f"local:{folder}"
    _local_models.forget()


@pytest.fixture
def fresh(tiny: str) -> Iterator[str]:
    """The tiny model, with a steered ``generate`` undone afterwards."""
    with restored(_local_models.load(tiny)):
        yield tiny


def signoff(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "machines" / "signoff", tmp_path / "machines" / "signoff")
    return tmp_path


async def test_a_local_optimizer_that_writes_no_block_is_refused_before_measuring(
    tmp_path: Path, fresh: str
) -> None:
    ws = open_workspace(signoff(tmp_path), harness="local")
    steer(_local_models.load(fresh), lambda _prompt: "Sure, here are better instructions: be clear.")
    with pytest.raises(BadInputError) as refused:
        await optimize(ws, "signoff", rounds=1, optimizer_model=fresh)
    said = str(refused.value)
    assert f"the optimizer machine cannot work on {fresh!r}: asked once, before anything was measured" in said
    assert "its reply held no <instructions> block: 'Sure, here are better instructions: be clear.'" in said
    assert [(f.argument, f.value) for f in refused.value.fixes] == [
        ("optimizer_model", "local:NAME"),
        ("harness", "HARNESS"),
    ]
    assert "with the optimizer machine's own model" in (refused.value.fixes[1].purpose)
    assert list(ws.store.iter_runs()) == []  # the live version was not run, and the probe is not stored


async def test_a_local_author_that_writes_no_file_block_is_refused(tmp_path: Path, fresh: str) -> None:
    ws = open_workspace(signoff(tmp_path), harness="local")
    steer(_local_models.load(fresh), lambda _prompt: "notes.md: this machine signs off.")
    with pytest.raises(BadInputError, match=NO_FILE):
        await draft_rubric(ws, "signoff", author_model=fresh)
    with pytest.raises(BadInputError, match=NO_FILE):
        await specialize(ws, "signoff", focus="questions about the weather", author_model=fresh)
    assert list(ws.store.iter_runs()) == []
    assert not (tmp_path / "machines" / "signoff" / "rubric_draft.py").exists()


async def test_a_local_model_that_answers_in_the_form_passes(tmp_path: Path, fresh: str) -> None:
    ws = open_workspace(signoff(tmp_path), harness="local")
    asked: list[str] = []

    def replies(prompt: str) -> str:
        asked.append(prompt)
        return "Clearer:\n<instructions>Answer, then sign off.</instructions>"

    steer(_local_models.load(fresh), replies)
    spec = ws.load("signoff")
    await check_helper_model(ws, ws.load("optimizer"), fresh, "optimizer_model", INSTRUCTIONS_FORM, spec)
    assert len(asked) == 1 and spec.own_instructions.strip().splitlines()[0] in asked[0]
    assert list(ws.store.iter_runs()) == []


async def test_a_remote_model_is_not_asked(tmp_path: Path) -> None:
    """A probe of a model that costs money would spend before the person's run did: only local ones."""
    script = REPO / "machines" / "signoff" / "script.json"
    ws = open_workspace(signoff(tmp_path), harness="scripted", script=script)
    optimizer, spec = ws.load("optimizer"), ws.load("signoff")
    await check_helper_model(ws, optimizer, "some/model", "optimizer_model", INSTRUCTIONS_FORM, spec)
    assert list(ws.store.iter_runs()) == []
