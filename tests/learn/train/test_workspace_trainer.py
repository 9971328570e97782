"""The workspace supplies its trainer as it supplies its harness: ``machine.learn.train(ws, NAME)`` from
Python makes the trainer through the workspace (the registered trainers by default), with no trainer
handed to it, and a trainer registered at run time is found by name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.training import Counting, Tutored, make_caps

from machine import open_workspace
from machine.learn import TrainOptions, train
from machine.training import TRAINERS, TrainerEntry, TrainerRequest

SETTINGS = TrainOptions(batch_size=2)


@pytest.fixture
def made() -> Iterator[list[TrainerRequest]]:
    """A ``counting`` trainer in the registry for the test's length, recording what it was made for."""
    requests: list[TrainerRequest] = []

    def make(request: TrainerRequest) -> Counting:
        requests.append(request)
        return Counting()

    TRAINERS["counting"] = TrainerEntry(make)
    yield requests
    del TRAINERS["counting"]


async def test_train_from_python_makes_the_named_trainer_through_the_workspace(
    tmp_path: Path, made: list[TrainerRequest]
) -> None:
    make_caps(tmp_path / "ws")
    ws = open_workspace(tmp_path / "ws", harness=Tutored(), budget="none")
    candidate = await train(ws, "caps", samples=1, trials=1, options=SETTINGS, trainer="counting")
    assert [request.root for request in made] == [ws.root]
    assert candidate.report.training is not None and candidate.report.training.steps > 0


async def test_a_workspace_given_its_own_trainer_trains_with_it(tmp_path: Path) -> None:
    make_caps(tmp_path / "ws")
    asked: list[tuple[str | None, str]] = []

    def supply(name: str | None, base: str, root: Path) -> Counting:
        asked.append((name, base))
        return Counting()

    ws = open_workspace(tmp_path / "ws", harness=Tutored(), budget="none")
    ws.adapters = replace(ws.adapters, trainer=supply)
    candidate = await train(ws, "caps", samples=1, trials=1, options=SETTINGS)
    assert [name for name, _ in asked] == [None]
    assert candidate.report.training is not None and candidate.report.training.steps > 0
