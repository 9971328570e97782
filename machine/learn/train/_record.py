"""The training record: ``.machine/training/<id>/`` holds what went into a training and what came out,
so a result can be traced and a stopped training resumed. ``record.json`` pins the base model, trainer,
renderer, effort, hyperparameters, the exact selection (run ids and filters), each dataset file by
sha256, the library version and git revision; ``train.jsonl`` holds the examples as sent (RL: the cases
it samples), ``metrics.jsonl`` one line per step (an RL step's rewards beside its loss),
``checkpoints.jsonl`` each saved checkpoint, ``train.log`` what happened in words. A record is never
overwritten: each training gets a folder of its own."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from machine.errors import BadInputError, Fix, MachineError, NotFoundError, plain_spelling
from machine.runs import Model, new_run_id, now, open_new, write_atomic
from machine.spec import FixedGate
from machine.training import Checkpoint, StepMetrics, TrainExample, TrainingPlan, TrainSettings

from ..rl import RLOptions, RLPlan

TRAINING_DIR = "training"
"""The folder under the workspace's data folder that holds a record per training."""
RECORD, EXAMPLES, METRICS, CHECKPOINTS, LOG = (
    "record.json",
    "train.jsonl",
    "metrics.jsonl",
    "checkpoints.jsonl",
    "train.log",
)


class Pin(Model):
    """A file that went in, by content."""

    path: str
    sha256: str
    rows: int = 0

    @classmethod
    def of(cls, text: str, *, rows: int, path: str = EXAMPLES) -> Pin:
        """The pin of ``text`` as it will be written to ``path``."""
        return cls(path=path, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), rows=rows)


def examples_text(examples: list[TrainExample]) -> str:
    """``train.jsonl``: one example a line, as sent to the trainer."""
    return "".join(e.model_dump_json() + "\n" for e in examples)


class Chosen(Model):
    """The exact selection: the filters and the runs they kept."""

    samples: int = 0
    """New runs made of each case before selecting."""
    min_score: float
    best_of: int | None
    any_model: bool
    own_model: str | None
    from_model: str | None = None
    from_suite: str | None = None
    all_sources: bool = False
    sources: dict[str, int] = Field(default_factory=dict)
    """The runs kept by where they came from: ``{"teacher on scripted": 16}``."""
    held_out: list[str] = Field(default_factory=list)
    """The held-out case ids kept out (their inputs were kept out too)."""
    run_ids: list[str] = Field(default_factory=list)


class TrainingRecord(Model):
    """What one training took in and left, as record.json keeps it."""

    id: str
    machine: str
    trainer: str
    base_model: str
    renderer: str = ""
    settings: TrainSettings
    selection: Chosen
    datasets: list[Pin] = Field(default_factory=list)
    library_version: str | None = None
    revision: str | None = None
    sampled: int = 0
    """Runs made for this training (``samples`` of each case)."""
    redacted: int = 0
    """Secrets replaced by a marker in the examples (the runs as stored keep them)."""
    plan: TrainingPlan | None = None
    """The plan it followed, worked out before its first step (None in records made before plans)."""
    gate: FixedGate | None = None
    """The gate its candidate faces, fixed (and its baseline measured) before its first step."""
    rl: RLOptions | None = None
    """RL's options (method ``rl``): the groups, steps and loss."""
    rl_plan: RLPlan | None = None
    """RL's plan, counted and priced before its first step (``plan`` is SFT's and DPO's)."""
    status: Literal["preparing", "training", "trained", "stopped", "failed"] = "preparing"
    error: str | None = None
    checkpoint: Checkpoint | None = None
    steps: int = 0
    candidate: str | None = None
    created_at: datetime = Field(default_factory=now)

    def identity(self) -> dict[str, Any]:
        """What a resumed training must share with this one: everything that decides what is learned."""
        return {
            "machine": self.machine,
            "trainer": self.trainer,
            "base_model": self.base_model,
            "settings": self.settings.model_dump(mode="json"),
            "selection": self.selection.model_dump(mode="json"),
            "datasets": [p.sha256 for p in self.datasets],
            "rl": None if self.rl is None else self.rl.model_dump(mode="json"),
        }


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _private(path: Path, text: str, *, append: bool = False) -> None:
    with open_new(path, append=append) as handle:  # never through a symlink planted at its name
        handle.write(text)


class RecordFolder:
    """One training's folder and its files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def create(cls, root: Path, inputs: list[Path]) -> RecordFolder:
        """A new folder under ``root`` (never an earlier one), which overlaps none of ``inputs``."""
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = root / new_run_id()
        for path in inputs:
            there = path.resolve()
            if there == folder.resolve() or there.is_relative_to(folder.resolve()):
                raise BadInputError(f"the training record's folder {folder} would overlap its input {path}")
        folder.mkdir(mode=0o700)  # raises if it exists: a record is never overwritten
        return cls(folder)

    @classmethod
    def open(cls, root: Path, record_id: str) -> RecordFolder:
        """The record ``record_id`` under ``root``: a folder of its own there, never one a link leads to
        elsewhere (its files would be read, and written, outside the workspace)."""
        folder = root / record_id
        plain = record_id not in ("", ".", "..") and "/" not in record_id and os.sep not in record_id
        if not plain or not (folder / RECORD).is_file():
            known = sorted(p.name for p in root.iterdir() if (p / RECORD).is_file()) if root.is_dir() else []
            raise NotFoundError(
                f"there is no training record {record_id!r} in {root}; the records are: "
                + (", ".join(known[-10:]) or "none")
            )
        where = folder.resolve()
        if folder.is_symlink() or where.parent != root.resolve():
            raise BadInputError(
                f"training record {record_id!r} in {root} leads to {where}, outside the workspace's training "
                f"records: a record is a folder of its own in {root}; remove the link {folder}"
            )
        return cls(folder)

    @property
    def id(self) -> str:
        return self.folder.name

    def read(self) -> TrainingRecord:
        path = self.folder / RECORD
        try:
            return TrainingRecord.model_validate_json(path.read_bytes())
        except (ValidationError, ValueError) as error:
            raise BadInputError(f"{path} is not a training record this version can read ({error})") from None

    def write(self, record: TrainingRecord) -> None:
        write_atomic(self.folder / RECORD, (record.model_dump_json(indent=2) + "\n").encode(), private=True)

    def write_examples(self, text: str) -> None:
        """Write ``train.jsonl`` (``examples_text``), once: a record's examples are never written over."""
        fd = os.open(self.folder / EXAMPLES, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)

    def step(self, metrics: StepMetrics) -> None:
        _private(self.folder / METRICS, metrics.model_dump_json() + "\n", append=True)

    def checkpoint(self, checkpoint: Checkpoint) -> None:
        _private(self.folder / CHECKPOINTS, checkpoint.model_dump_json() + "\n", append=True)

    def log(self, line: str) -> None:
        _private(self.folder / LOG, f"{now().isoformat(timespec='seconds')} {line}\n", append=True)

    def metrics(self) -> list[StepMetrics]:
        path = self.folder / METRICS
        if not path.exists():
            return []
        return [StepMetrics.model_validate_json(line) for line in path.read_text().splitlines() if line]

    def rewind(self, step: int) -> None:
        """Forget the steps logged after ``step``, the state a resumed training goes on from: they are
        trained again, and logged as they are."""
        logged = self.metrics()
        kept = [m for m in logged if m.step <= step]
        if len(kept) < len(logged):
            text = "".join(m.model_dump_json() + "\n" for m in kept)
            write_atomic(self.folder / METRICS, text.encode(), private=True)
            self.log(f"resumed from the state after step {step}: steps {step + 1}-{logged[-1].step} go again")

    def steps_done(self, record: TrainingRecord) -> int:
        """The steps trained: the last one logged, which a training killed before it could write its record
        has logged all the same."""
        logged = self.metrics()
        return max(record.steps, logged[-1].step if logged else 0)

    def checkpoints(self) -> list[Checkpoint]:
        """Every state saved on the way and the final checkpoint, in order."""
        path = self.folder / CHECKPOINTS
        if not path.exists():
            return []
        return [Checkpoint.model_validate_json(line) for line in path.read_text().splitlines() if line]

    def last_checkpoint(self) -> Checkpoint | None:
        saved = self.checkpoints()
        return saved[-1] if saved else None

    def saved(self, checkpoint: Checkpoint) -> None:
        """A state the trainer saved on the way, recorded at once (once)."""
        if checkpoint != self.last_checkpoint():
            self.checkpoint(checkpoint)

    def stopped(self, record: TrainingRecord, error: MachineError, *, failed: bool) -> None:
        """Say in the record why training ended early, keeping the state the trainer saved before it (an
        error a trainer raises carries it as ``checkpoint``) for a resumed training to start from."""
        record.status = "failed" if failed else "stopped"
        record.error = error.explain(plain_spelling)
        saved = getattr(error, "checkpoint", None)
        if isinstance(saved, Checkpoint):
            self.saved(saved)
        record.checkpoint = self.last_checkpoint()
        self.write(record)
        self.log(f"{record.status} after {record.steps} steps: {record.error}; {self.resume(record)}")

    def interrupted(self, record: TrainingRecord) -> None:
        """A training stopped from outside (Ctrl-C, SIGTERM): the record says so, with the steps done and
        the last state saved."""
        record.status = "stopped"
        record.steps = self.steps_done(record)
        record.error = f"stopped from outside after step {record.steps}"
        record.checkpoint = self.last_checkpoint()
        self.write(record)
        self.log(f"stopped from outside after {record.steps} steps; {self.resume(record)}")

    def resume(self, record: TrainingRecord) -> str:
        """How to resume this training, in words any face may show."""
        again = Fix(operation="train", machine=record.machine, arguments=(("resume", self.id),))
        return f"resume it: {plain_spelling(again)}"


def epoch_means(steps: list[StepMetrics]) -> list[float]:
    """The mean loss of each epoch, in order: what says whether training went down, where the first and
    last batch alone may differ by which examples they held."""
    by_epoch: dict[int, list[float]] = {}
    for m in steps:
        if m.loss is not None:
            by_epoch.setdefault(m.epoch, []).append(m.loss)
    return [sum(v) / len(v) for _epoch, v in sorted(by_epoch.items())]


def differences(before: dict[str, Any], after: dict[str, Any], where: str = "") -> list[str]:
    """Each field that differs between two identities, in words."""
    found = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        name = f"{where}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            found += differences(a, b, name + ".")
        elif a != b:
            shown = [json.dumps(v)[:80] for v in (a, b)]
            found.append(f"{name} was {shown[0]}, now {shown[1]}")
    return found
