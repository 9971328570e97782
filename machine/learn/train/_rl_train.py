"""Train by reinforcement learning with the machine's own evaluator as the reward (``method="rl"``): each
step picks ``cases_per_step`` of the cases (never a held-out one), samples a group of ``group`` runs of
each on the policy as it is (ordinary runs, graded, stored and marked as this training's samples),
rewards each run by the rubric's weighted sum over every criterion, centres the rewards in their group,
and takes one update. The plan is counted and priced before anything runs, the gate is fixed before the
first step, a step whose planned price the budget cannot cover is not begun, and the checkpoint faces
the held-out gate as every candidate does."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from machine.budget import TRAINING, Budget
from machine.errors import BadInputError, BudgetExceeded, MachineError
from machine.measure import BatchWriter
from machine.runs import Harness, Run, counted, git_revision, library_version
from machine.spec import MAX_LOSSES, Case, Machine, TrainingSummary
from machine.training import (
    Checkpoint,
    Phase,
    RLSession,
    RLStepMetrics,
    RLTrainer,
    RLUpdate,
    StepMetrics,
    Trainer,
    TrainSettings,
    learning_rate_at,
)
from machine.versions import Candidate, thin_gate, thinned
from machine.workspace import Workspace

from .._near_duplicates import Inputs
from ..rl import Group, RLPlan, groups_of, plan_rl, reward_of, step_stats
from ._gating import (
    earlier_record,
    fixed_gate,
    interrupted,
    live_version,
    open_record,
    proposed,
    stopped,
)
from ._options import TrainOptions
from ._prepare import MakeTrainer, Target, target, trainer_for
from ._record import TRAINING_DIR, Chosen, RecordFolder, TrainingRecord


@dataclass
class Told:
    """Who is told what as the training goes: lines, counted phases, each run, each step."""

    say: Callable[[str], None]
    begin: Callable[[Phase], None]
    on_run: Callable[[Run], None] | None
    on_step: Callable[[StepMetrics], None] | None


async def train_rl(
    ws: Workspace,
    name: str,
    o: TrainOptions,
    *,
    trainer: Trainer | str | None,
    make_trainer: MakeTrainer | None,
    told: Told,
) -> Candidate:
    """RL on ``name`` as ``o`` says (see the module), proposing the checkpoint against the live version."""
    at = target(ws, name)
    settings = o.settings(at.base, None if ws.effort is None else ws.effort.value, at.start)
    chosen = trainer_for(trainer, make_trainer, settings, ws)
    if not isinstance(chosen, RLTrainer):
        raise BadInputError(f"the {chosen.name} trainer says it learns by RL but offers no RL session")
    ws.budget.probe_price(TRAINING + at.base)
    cases = training_cases(ws, at)
    plan = rl_plan(ws, at, o, cases)
    told.say(f"RL plan: {plan.priced()}")
    for warning in plan.warnings:
        told.say(f"warning: {warning}")
    live = live_version(ws, at.spec)
    folder, record, done = _record(ws, at, o, _fresh(ws, at, o, chosen.name, settings, plan), cases)
    told.say(f"training record {folder.id}: RL on {counted(len(cases), 'case')}")
    spent_before = ws.budget.spent
    gate = await fixed_gate(ws, at, o, folder, record, told.on_run, told.say, told.begin)
    record.status = "training"
    folder.write(record)
    started = time.monotonic()
    session = await chosen.rl(
        settings, o.reinforcement.settings(), folder=folder.folder, budget=ws.budget, resume=done
    )
    try:
        sampled = (cases, settings.seed)
        checkpoint = await _steps(ws, at, o, sampled, plan, session, folder, record, done, told)
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()
    summary = _summary(folder, record, session.learning_rate, time.monotonic() - started, done)
    summary.cost_usd = ws.budget.spent - gate.cost_usd - spent_before
    told.say(f"proposing {checkpoint.model} against {live.label} on {at.held_path.name}")
    note = f"trained {folder.id} (rl)"
    return await proposed(
        ws,
        at,
        o,
        folder,
        record,
        checkpoint,
        summary,
        gate,
        note=note,
        on_run=told.on_run,
        on_begin=told.begin,
    )


def _fresh(
    ws: Workspace, at: Target, o: TrainOptions, trainer: str, settings: TrainSettings, plan: RLPlan
) -> TrainingRecord:
    """The record of an RL training begun now (no id yet: opening its folder gives it one)."""
    return TrainingRecord(
        id="",
        machine=at.spec.name,
        trainer=trainer,
        base_model=at.base,
        settings=settings,
        selection=Chosen(
            min_score=0.0, best_of=None, any_model=False, own_model=None, held_out=[c.id for c in at.held]
        ),
        rl=o.reinforcement,
        rl_plan=plan,
        library_version=library_version(),
        revision=git_revision(ws.root),
    )


def _record(
    ws: Workspace, at: Target, o: TrainOptions, fresh: TrainingRecord, cases: list[Case]
) -> tuple[RecordFolder, TrainingRecord, Checkpoint | None]:
    """A new record of ``fresh`` holding the cases it samples, or the one ``o.resume`` names when it is
    the same training, with its last saved state."""
    root = ws.data_dir / TRAINING_DIR
    earlier = earlier_record(root, o.resume, at.spec.name)
    text = "".join(case.model_dump_json() + "\n" for case in cases)
    return open_record(ws, root, earlier, fresh, (text, len(cases)), at.held_path)


def rl_plan(ws: Workspace, at: Target, o: TrainOptions, cases: list[Case] | None = None) -> RLPlan:
    """The plan of RL on ``at`` as ``o`` says, its runs counting the gate's held-out runs on each side
    too, and a held-out file too small for the gate to pass anything said."""
    rl, held = o.reinforcement, len(at.held)
    cases = training_cases(ws, at) if cases is None else cases
    plan = plan_rl(at.spec, cases, rl, base_model=at.base, kl=o.kl)
    plan.runs += 2 * o.trials * held
    plan.runs_are += f", and {counted(o.trials, 'trial')} of {counted(held, 'held-out case')} on each side"
    thin = thin_gate(held, o.min_z, where=at.held_path.name)
    plan.warnings += [thin] if thin else []
    return plan


def training_cases(ws: Workspace, at: Target) -> list[Case]:
    """The cases RL samples: the machine's cases, less every held-out one (by id, and by input compared
    as the selection of good runs compares it)."""
    held_ids, held_inputs = {c.id for c in at.held}, Inputs(c.input for c in at.held)
    cases = [c for c in ws.cases(at.spec.name) if c.id not in held_ids and held_inputs.match(c.input) is None]
    if not cases:
        raise BadInputError(
            f"machine {at.spec.name!r} has no cases to sample outside its held-out ones: write cases "
            "(cases.json) that the gate does not measure"
        )
    return cases


def step_cases(cases: Sequence[Case], seed: int, *, count: int, step: int) -> list[Case]:
    """Step ``step``'s cases: ``count`` of them (all, when there are no more), drawn from the training's
    seed and the step, so a resumed training samples what it would have."""
    return random.Random(f"{seed}:rl:{step}").sample(list(cases), min(count, len(cases)))


async def _steps(
    ws: Workspace,
    at: Target,
    o: TrainOptions,
    sampled: tuple[list[Case], int],
    plan: RLPlan,
    session: RLSession,
    folder: RecordFolder,
    record: TrainingRecord,
    done: Checkpoint | None,
    told: Told,
) -> Checkpoint:
    """Every step not done yet on ``sampled`` (the cases, and the seed that picks each step's), each
    recorded; a state saved every ``save_every`` steps, and when the training is stopped (a cancel, a
    spent budget) after the steps since the last one."""
    rl = o.reinforcement
    steps, saved = rl.rl_steps, done
    per_step = None if plan.price_usd is None else plan.price_usd / steps
    told.begin(Phase(what=f"RL on {at.base}", total=steps, unit="steps", done=session.done))

    async def save() -> None:
        nonlocal saved
        if session.done > (saved.step if saved else 0):
            saved = await session.save()
            folder.saved(saved)
            ws.events.emit("checkpoint", record=folder.id, machine=record.machine, step=saved.step)

    try:
        for step in range(session.done + 1, steps + 1):
            _afford(ws.budget, per_step, step)
            metrics = await _step(ws, at, o, sampled, session, folder.id, step, told.on_run)
            _recorded(ws, folder, record, metrics, steps, told)
            if session.save_every and step % session.save_every == 0 and step < steps:
                await save()
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
        with anyio.CancelScope(shield=True):
            await save()
        interrupted(folder, record, told.say)
        raise
    except BudgetExceeded as refused:
        with anyio.CancelScope(shield=True):
            await save()
        raise stopped(folder, record, refused) from refused
    except MachineError as error:
        folder.stopped(record, error, failed=True)
        raise
    await save()
    checkpoint = await session.finish()
    folder.checkpoint(checkpoint)
    record.checkpoint, record.status = checkpoint, "trained"
    folder.write(record)
    folder.log(f"checkpoint {checkpoint.model} after {checkpoint.step} steps")
    told.say(f"trained: {checkpoint.model}")
    return checkpoint


def _recorded(
    ws: Workspace, folder: RecordFolder, record: TrainingRecord, metrics: StepMetrics, steps: int, told: Told
) -> None:
    """A step written to the record and its metrics, and told (the event log, ``on_step``)."""
    record.steps, record.sampled = metrics.step, record.sampled + (metrics.rl.rollouts if metrics.rl else 0)
    folder.step(metrics)
    folder.write(record)
    of = {"record": folder.id, "machine": record.machine, "steps": steps}
    ws.events.emit("training_step", **of, **metrics.model_dump())
    if told.on_step is not None:
        told.on_step(metrics)


def _afford(budget: Budget, per_step: float | None, step: int) -> None:
    """Refuse to begin a step whose planned price (sampling, judging, training) is more than is left."""
    left = budget.remaining
    if per_step and left is not None and per_step > left:
        raise BudgetExceeded(
            f"RL step {step} is planned to cost about ${per_step:.4f}, more than the ${left:.4f} left of "
            "the budget"
        )


async def _step(
    ws: Workspace,
    at: Target,
    o: TrainOptions,
    sampled: tuple[list[Case], int],
    session: RLSession,
    record_id: str,
    step: int,
    on_run: Callable[[Run], None] | None,
) -> StepMetrics:
    """Sample and grade the step's groups, reward them, and update the policy from their advantages."""
    rl = o.reinforcement
    started, spent = time.monotonic(), ws.budget.spent
    picked = step_cases(*sampled, count=rl.cases_per_step, step=step)
    runs = await _rollouts(
        ws, at.spec, picked, rl.group, session.sampler(step), o, f"{record_id} step {step}", on_run
    )
    groups = groups_of([reward_of(run, at.spec.rubric) for run in runs], scale_rewards=rl.scale_rewards)
    advantages = {r.run_id: a for g in groups for r, a in zip(g.rewards, g.advantages, strict=True)}
    sampling = time.monotonic() - started
    rate = learning_rate_at(session.learning_rate, step, rl.rl_steps, o.lr_schedule)
    update = await session.update(step, advantages, rate)
    return StepMetrics(
        step=step,
        epoch=1,
        loss=update.loss,
        sequences=update.sequences,
        tokens=update.tokens,
        learning_rate=rate,
        seconds=update.seconds,
        cost_usd=ws.budget.spent - spent,
        rl=_rl_metrics(groups, runs, update, sampling),
    )


async def _rollouts(
    ws: Workspace,
    spec: Machine,
    cases: list[Case],
    group: int,
    sampler: Harness,
    o: TrainOptions,
    marked: str,
    on_run: Callable[[Run], None] | None,
) -> list[Run]:
    """``group`` runs of each case on ``sampler`` (trials 0 to group − 1), graded, marked as ``marked``'s
    samples and stored; in the cases' order. Refused work is raised once the finished runs are stored."""
    writer = BatchWriter(ws.store)
    made: dict[int, Run] = {}
    jobs = list(enumerate((case, trial) for case in cases for trial in range(group)))

    async def one(job: tuple[int, tuple[Case, int]]) -> None:
        index, (case, trial) = job
        run = await ws.run(
            spec,
            case.input,
            case=case,
            trial=trial,
            harness=sampler,
            grade=True,
            pass_score=o.pass_score,
            store=False,
        )
        run.sampled_for = marked
        writer.add([run])
        made[index] = run
        if on_run is not None:
            on_run(run)

    refused = await writer.run(jobs, one, concurrency=o.concurrency)
    if refused:
        raise BudgetExceeded(
            f"sampling stopped after {len(made)} of {len(jobs)} runs ({refused}); they are stored"
        )
    return [made[index] for index in sorted(made)]


def _rl_metrics(groups: list[Group], runs: list[Run], update: RLUpdate, sampling: float) -> RLStepMetrics:
    """The step's rollouts (``step_stats``) and its update, as the record keeps them."""
    stats = step_stats(groups)
    replies = [run.usage.output_tokens for run in runs]
    return RLStepMetrics(
        reward=stats.mean_reward,
        criteria=stats.criterion_means,
        rollouts=stats.rollouts,
        trained=stats.trained,
        flat_share=stats.flat_share,
        unscored=stats.unscored,
        failed=stats.failed,
        reply_tokens=sum(replies) / len(replies) if replies else None,
        cut_share=sum(run.stop_reason == "max_tokens" for run in runs) / len(runs) if runs else 0.0,
        ratio=update.ratio,
        clipped=update.clipped,
        kl=update.kl,
        entropy=update.entropy,
        grad_norm=update.grad_norm,
        sampling_seconds=sampling,
    )


def _summary(
    folder: RecordFolder, record: TrainingRecord, rate: float, seconds: float, done: Checkpoint | None
) -> TrainingSummary:
    """The candidate's report of the training: its steps' losses and mean rewards."""
    steps = folder.metrics()
    losses = [m.loss for m in steps if m.loss is not None]
    rewards = [m.rl.reward for m in steps if m.rl is not None and m.rl.reward is not None]
    return TrainingSummary(
        record=folder.id,
        trainer=record.trainer,
        base_model=record.base_model,
        sampled=record.sampled,
        runs=record.sampled,
        sequences=sum(m.sequences for m in steps),
        tokens=sum(m.tokens for m in steps),
        steps=record.steps,
        learning_rate=rate,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        seconds=seconds,
        losses=thinned(losses, MAX_LOSSES),
        rewards=thinned(rewards, MAX_LOSSES),
        resumed_at=None if done is None else done.step + 1,
    )
