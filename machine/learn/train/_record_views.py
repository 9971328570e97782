"""The workspace's training records as a person reads them (``machine training list`` and ``show``): each
record's outcome (the candidate it became and what the gate decided, read from the machine's versions),
its plan, and its loss, per step as numbers and as a small chart, and per epoch."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from machine.errors import MachineError
from machine.runs import Model, counted
from machine.spec import VERSIONS_FILE, read_book
from machine.training import Checkpoint, StepMetrics
from machine.versions import sparkline
from machine.workspace import Workspace

from ._record import TRAINING_DIR, RecordFolder, TrainingRecord, epoch_means


class TrainingRow(Model):
    """One training record in the listing."""

    id: str
    machine: str
    trainer: str
    base_model: str
    status: str
    steps: int
    planned_steps: int | None = None
    candidate: str | None = None
    outcome: str
    """What became of it: the candidate's state and the gate's decision (``pending, passed``), or why
    there is none (``stopped after step 3``)."""
    created_at: datetime


class TrainingShown(Model):
    """One training record whole: the record, its outcome, and its loss per step and per epoch."""

    record: TrainingRecord
    outcome: str
    steps: list[StepMetrics] = Field(default_factory=list)
    epoch_losses: list[float] = Field(default_factory=list)
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    """Every state saved on the way (to resume from) and the final checkpoint, in order."""

    def lines(self) -> list[str]:
        """The record as ``machine training show`` prints it."""
        r = self.record
        said = [
            f"training {r.id}: {r.machine}, the {r.trainer} trainer on {r.base_model}",
            f"  {r.status}, {r.steps} steps; {self.outcome}",
        ]
        if r.plan is not None:
            said += r.plan.lines()[1:]
        if r.gate is not None:
            g = r.gate
            baseline = "-" if g.baseline_mean is None else f"{g.baseline_mean:.3f}"
            said.append(
                f"  gate: {g.file} (sha256 {g.sha256[:12]}), {counted(g.trials, 'trial')}, "
                f"min_z {g.min_z:g}; {g.baseline} baseline mean {baseline} over "
                f"{counted(g.baseline_runs, 'run')}"
            )
            if g.held:
                said.append(f"  no worse on: {', '.join(g.held)}")
        said += self._rl_lines()
        losses = [m.loss for m in self.steps if m.loss is not None]
        if losses:
            said.append(f"  loss {sparkline(losses)}  {losses[0]:.4f} at step 1 -> {losses[-1]:.4f}")
            said.append("  loss by epoch: " + " -> ".join(f"{x:.4f}" for x in self.epoch_losses))
            drifts = [m.chosen_drift for m in self.steps if m.chosen_drift is not None]
            if drifts:  # DPO: far from 0 (tens of nats), the model has left its reference (a collapse)
                said.append(
                    f"  chosen drift (log p of the chosen answers against the reference) "
                    f"{sparkline(drifts)}  {drifts[0]:+.3f} at step 1 -> {drifts[-1]:+.3f}"
                )
            said.append("  step  epoch  loss      tokens  seconds")
            said += [
                f"  {m.step:>4}  {m.epoch:>5}  {'-' if m.loss is None else f'{m.loss:.4f}':<8}  "
                f"{m.tokens:>6}  {m.seconds:>7.1f}"
                for m in self.steps
            ]
        return said

    def _rl_lines(self) -> list[str]:
        """RL's options, plan and mean reward per step (nothing for SFT and DPO)."""
        r, o = self.record, self.record.rl
        if o is None:
            return []
        said = [
            f"  RL: groups of {o.group} of {counted(o.cases_per_step, 'case')} a step, "
            f"{counted(o.rl_steps, 'step')}, {o.loss}, temperature {o.temperature:g}; {r.sampled} samples"
        ]
        if r.rl_plan is not None:
            said.append(f"  plan: {r.rl_plan.priced()}")
        rewards = [m.rl.reward for m in self.steps if m.rl is not None and m.rl.reward is not None]
        if rewards:
            said.append(f"  reward {sparkline(rewards)}  {rewards[0]:.3f} at step 1 -> {rewards[-1]:.3f}")
        return said


def training_rows(ws: Workspace, name: str | None = None) -> list[TrainingRow]:
    """The workspace's training records (of machine ``name``), newest first."""
    root = ws.data_dir / TRAINING_DIR
    if not root.is_dir():
        return []
    rows = []
    for folder in sorted(root.iterdir(), reverse=True):
        if folder.is_symlink() or not (folder / "record.json").is_file():
            continue
        try:
            opened = RecordFolder.open(root, folder.name)
            record = opened.read()
        except MachineError:
            continue
        record.steps = opened.steps_done(record)  # a killed training's record may not have said
        if name is not None and record.machine != name:
            continue
        rows.append(
            TrainingRow(
                id=record.id,
                machine=record.machine,
                trainer=record.trainer,
                base_model=record.base_model,
                status=record.status,
                steps=record.steps,
                planned_steps=None if record.plan is None else record.plan.steps,
                candidate=record.candidate,
                outcome=outcome_of(ws, record),
                created_at=record.created_at,
            )
        )
    return rows


def training_shown(ws: Workspace, record_id: str) -> TrainingShown:
    """The training record ``record_id`` whole; an unknown one lists the records there are."""
    folder = RecordFolder.open(ws.data_dir / TRAINING_DIR, record_id)
    record = folder.read()
    record.steps = folder.steps_done(record)
    steps = folder.metrics()
    return TrainingShown(
        record=record,
        outcome=outcome_of(ws, record),
        steps=steps,
        epoch_losses=epoch_means(steps),
        checkpoints=folder.checkpoints(),
    )


def outcome_of(ws: Workspace, record: TrainingRecord) -> str:
    """What became of a training: its candidate's state and gate decision, or where it stopped."""
    if record.candidate is None:
        if record.status in ("stopped", "failed"):
            return f"{record.status} after step {record.steps}: {record.error or 'no reason recorded'}"
        return f"{record.status}, no candidate yet"
    book = read_book(ws.machines_dir / record.machine / VERSIONS_FILE)
    version = next((v for v in book.versions if v.label == record.candidate), None) if book else None
    if version is None:
        return f"candidate {record.candidate}, not in the machine's versions now"
    decided = version.report.outcome if version.report is not None else "not measured"
    return f"candidate {record.candidate}: {version.status}, {decided}"
