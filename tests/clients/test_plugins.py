"""A third-party package adds a harness and a trainer the way this package adds its own: an entry point
naming an entry. Made here as an installed distribution would be (a ``*.dist-info`` folder with its
``METADATA`` and ``entry_points.txt`` on ``sys.path``, beside its module): its backends are found by name and
listed; one whose extra's module is missing is refused, naming the extra, before its factory runs; one
whose extra is there is made; a broken one is reported with the package it came from."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from machine import BadInputError
from machine._backends import BrokenBackend
from machine.clients import HARNESSES, TRAINERS, make_harness, make_trainer
from machine.clients.echo import EchoHarness

MODULE = """
from machine.runs import HarnessEntry
from machine.training import TrainerEntry

MADE = []


class AcmeTrainer:
    name = "acme"

    def prepare(self, examples, settings):
        raise NotImplementedError

    async def train(self, *args, **kwargs):
        raise NotImplementedError


def _harness(setup):
    MADE.append("harness")
    from machine.clients.echo import EchoHarness

    return EchoHarness()


def _trainer(request):
    MADE.append("trainer")
    return AcmeTrainer()


MISSING_HARNESS = HarnessEntry(_harness, extra="acme-gpu", modules=("acme_gpu_runtime",))
MISSING_TRAINER = TrainerEntry(_trainer, extra="acme-gpu", modules=("acme_gpu_runtime",))
HARNESS = HarnessEntry(_harness, extra="acme", modules=("json",), free=True)
TRAINER = TrainerEntry(_trainer, extra="acme", modules=("json",), trains_what="acme's models")
NOT_AN_ENTRY = "a string"
"""

ENTRY_POINTS = """[machine.harnesses]
acme-gpu = acme_machine:MISSING_HARNESS
acme = acme_machine:HARNESS
acme-broken = acme_machine:NOT_AN_ENTRY
acme-lost = acme_machine:NOWHERE

[machine.trainers]
acme-gpu = acme_machine:MISSING_TRAINER
acme = acme_machine:TRAINER
"""


@pytest.fixture
def acme(tmp_path: Path) -> Iterator[object]:
    """The ``acme-machine`` distribution, installed on ``sys.path`` for the test, then taken away."""
    info = tmp_path / "acme_machine-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-machine\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (tmp_path / "acme_machine.py").write_text(MODULE)
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    HARNESSES.reread()
    TRAINERS.reread()
    try:
        yield importlib.import_module("acme_machine")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("acme_machine", None)
        importlib.invalidate_caches()
        HARNESSES.reread()
        TRAINERS.reread()


def test_a_plugins_backends_are_found_by_name_and_listed(acme: object) -> None:
    assert {"acme", "acme-gpu"} <= set(HARNESSES) and {"acme", "acme-gpu"} <= set(TRAINERS)
    assert list(TRAINERS)[:2] == ["tinker", "local"]  # this package's own first, then the plugin's
    with pytest.raises(BadInputError, match=r"choose one of: echo, scripted, tinker, .*acme"):
        make_harness("nope")


def test_a_plugin_whose_extra_is_missing_is_refused_before_it_is_made(acme: object) -> None:
    expected = (
        r"the acme-gpu (harness|trainer) needs the acme-gpu extra, and acme_gpu_runtime is not installed: "
        r"pip install 'machine\[acme-gpu\]'"
    )
    with pytest.raises(BadInputError, match=expected):
        make_harness("acme-gpu")
    with pytest.raises(BadInputError, match=expected):
        make_trainer("acme-gpu", "acme/base")
    assert acme.MADE == []  # type: ignore[attr-defined]


def test_a_plugin_whose_extra_is_there_is_made_and_declares_what_it_can(acme: object) -> None:
    from machine.runs import is_free

    assert isinstance(make_harness("acme"), EchoHarness)
    assert make_trainer("acme", "acme/base").name == "acme"
    assert acme.MADE == ["harness", "trainer"]  # type: ignore[attr-defined]
    assert is_free("acme") and not is_free("acme-gpu")


def test_a_broken_plugin_is_named_with_its_package(acme: object) -> None:
    with pytest.raises(BrokenBackend, match=r"the harness 'acme-broken' \(.*acme-machine\) is a str"):
        make_harness("acme-broken")
    with pytest.raises(
        BrokenBackend, match=r"the harness 'acme-lost' \(acme_machine:NOWHERE.*cannot be loaded"
    ):
        make_harness("acme-lost")
