"""The MCP tools that train: train (a fine-tuned checkpoint as a pending candidate), plan_training (its plan,
a dry run) and smoke_training (two steps trained and sampled, then discarded). Each is a thin face over
``machine.learn``'s ``train`` and ``check_training``, with the person's consent where it spends.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp_types import ToolAnnotations

from machine.errors import MachineError
from machine.learn import TrainingCheck, TrainOptions, check_training, train
from machine.training import Phase
from machine.versions import Candidate

from ._asking import askable, asked, planned, spent_of
from ._bounds import MachineName, Resume, RunHarness, Trainer
from ._options import accepted, option_arguments, options_of
from ._results import Approval, NotAsked, TrainResult
from ._server import service
from ._service import OnProgress, tool_error, usd
from ._tools import USD

TRAIN_LEFT = ("concurrency", "effort")
TRAIN_ARGUMENTS = accepted(TrainOptions, "budget_usd", "trainer", "resume", "harness", leave=TRAIN_LEFT)
CHECK_LEFT = ("samples", "trials", "concurrency", "min_z", "allow_weak_gate", "pass_score", "resume")
PLAN_ARGUMENTS = accepted(TrainOptions, "trainer", leave=CHECK_LEFT)


async def ask_train(
    name: str,
    budget_usd: USD,
    samples: int,
    trials: int,
    trainer: str | None,
    resume: str | None,
    harness: str | None,
    min_z: float,
    allow_weak_gate: bool,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    ws = askable(ctx, name, budget_usd, None, harness)
    if isinstance(ws, NotAsked):
        return ws
    sampling = f"sample {samples} new runs of each case, then " if samples else ""
    who = f"the {trainer} trainer" if trainer else "its trainer"
    return asked(
        ctx,
        f"Train machine {name!r}: {sampling}fine-tune its model on its good runs with {who} and measure "
        "the checkpoint on holdout.json, proposing it as a pending candidate (the live version is "
        f"unchanged), spending at most {usd(ws.budget.usd or 0.0)}.",
        planned(
            ws,
            "train",
            name,
            samples=samples,
            trials=trials,
            resume=resume,
            min_z=min_z,
            allow_weak_gate=allow_weak_gate,
        ),
        most_usd=ws.budget.usd or 0.0,
    )


@option_arguments(TrainOptions, leave=TRAIN_LEFT)
async def train_machine(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_train)],
    trainer: Trainer = None,
    resume: Resume = None,
    harness: RunHarness = None,
    **options: Any,
) -> TrainResult:
    """Fine-tune the machine's model on its good runs (sampling `samples` more of each case first), then
    measure the checkpoint against the live version on holdout.json: a pending candidate, which commit
    makes live only if it passed the gate. Spends at most `budget_usd` (required; capped per call).
    `trainer` is tinker or local (default: local for a local: model, else tinker); `resume` continues a
    stopped training by its record id. Needs the person's consent: they are asked, or their configured
    allowance must cover the budget. Reports progress per finished run and per step, and where a resumed
    training resumes; returns the candidate's gate report (its training's `resumed_at` says that too)."""
    state = service(ctx)
    ws = state.spending(name, budget_usd, None, harness, TRAIN_ARGUMENTS)
    chosen = options_of(TrainOptions, TRAIN_ARGUMENTS, resume=resume, **options)

    def work(on_run: OnProgress) -> Awaitable[Candidate]:
        return train(
            ws,
            name,
            chosen,
            trainer=trainer,
            on_run=on_run,
            on_step=on_run,
            on_begin=_resumed(on_run),
        )

    what = f"train {name!r} (at most {usd(ws.budget.usd or 0.0)})"
    candidate, info = await state.spend(
        ctx, ws, consent, tool="train", name=name, what=what, work=work, accepts=TRAIN_ARGUMENTS
    )
    return TrainResult(**dict(candidate.report), model=candidate.version.model, **spent_of(ws), consent=info)


def _resumed(on_run: OnProgress) -> Callable[[Phase], None]:
    """Told each phase of the training: a resumed one's steps, which begin past its saved state, say
    where (``resuming at step 25 of 32``) as progress; the others are counted by their runs and steps."""

    def begin(phase: Phase) -> None:
        if phase.unit == "steps" and phase.done:
            on_run(f"resuming at step {phase.done + 1} of {phase.total}")

    return begin


@option_arguments(TrainOptions, leave=CHECK_LEFT)
async def plan_training(
    name: MachineName, ctx: Context, trainer: Trainer = None, **options: Any
) -> TrainingCheck:
    """Plan a training of the machine as `train` would, without training (a dry run): render every
    example the stored runs give, check it, count sequences, tokens and targets, price it and work out
    the plan (batch size, epochs, steps, learning rate, time), with why `train` would refuse it if it
    would. Samples, grades, spends and writes nothing."""
    state = service(ctx)
    state.known(name)
    chosen = options_of(TrainOptions, PLAN_ARGUMENTS, **options)
    try:
        async with state.lock:
            return await check_training(state.ws, name, chosen, trainer=trainer)
    except MachineError as error:
        raise tool_error(error, accepts=PLAN_ARGUMENTS) from error


SMOKE_ARGUMENTS = accepted(TrainOptions, "budget_usd", "trainer", "harness", leave=CHECK_LEFT)


async def ask_smoke(
    name: str, budget_usd: USD, trainer: str | None, harness: str | None, ctx: Context
) -> Elicit[Approval] | NotAsked:
    ws = askable(ctx, name, budget_usd, None, harness)
    if isinstance(ws, NotAsked):
        return ws
    who = f"the {trainer} trainer" if trainer else "its trainer"
    return asked(
        ctx,
        f"Smoke-test a training of machine {name!r} with {who}: two steps on its stored good runs, the "
        "state saved and loaded, one sample from the checkpoint, then all of it discarded (no record, no "
        f"candidate), spending at most {usd(ws.budget.usd or 0.0)}.",
        most_usd=ws.budget.usd or 0.0,
    )


@option_arguments(TrainOptions, leave=CHECK_LEFT)
async def smoke_training(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_smoke)],
    trainer: Trainer = None,
    harness: RunHarness = None,
    **options: Any,
) -> TrainingCheck:
    """Try a training of the machine end to end before paying for it: the plan as plan_training gives
    it, then two steps trained (the first saved, the second resumed from that state) and one sample
    from the checkpoint, all discarded: no training record, no candidate. On Tinker the two steps cost
    (at most `budget_usd`, required); a local model's are free. Needs the person's consent like train."""
    state = service(ctx)
    ws = state.spending(name, budget_usd, None, harness, SMOKE_ARGUMENTS)
    chosen = options_of(TrainOptions, SMOKE_ARGUMENTS, **options)

    def work(on_run: OnProgress) -> Awaitable[TrainingCheck]:
        return check_training(ws, name, chosen, smoke=True, trainer=trainer, on_step=on_run)

    what = f"smoke-test training {name!r} (at most {usd(ws.budget.usd or 0.0)})"
    check, _info = await state.spend(
        ctx, ws, consent, tool="smoke_training", name=name, what=what, work=work, accepts=SMOKE_ARGUMENTS
    )
    return check


def register_training(server: MCPServer, learning: dict[str, Any]) -> None:
    """Add the training tools (``learning``: the annotations every spending learning tool shares)."""
    server.tool(
        name="plan_training",
        annotations=ToolAnnotations(
            title="Plan a training without training (a dry run)",
            read_only_hint=True,
            destructive_hint=False,
            open_world_hint=False,
        ),
    )(plan_training)
    server.tool(
        name="smoke_training",
        annotations=ToolAnnotations(
            title="Try two steps of a training, then discard them (spends on Tinker)",
            destructive_hint=False,
            **learning,
        ),
    )(smoke_training)
    server.tool(
        name="train",
        annotations=ToolAnnotations(
            title="Train a machine's model (spends)", destructive_hint=False, **learning
        ),
    )(train_machine)
