"""The MCP tools that improve machines: specialize (the author writes a child and its cases), optimize
(rewrites of the instructions, kept only when measured better) and train (a fine-tuned checkpoint as a
pending candidate). Each is a thin face over the operation ``machine specialize``/``optimize``/``train``
call: it checks the call, asks for the person's consent as ``rehearse`` does, runs the operation under the
server's lock with its per-run progress, settles the spend and returns the operation's own report.

No ``from __future__ import annotations`` here: the SDK reads the tools' resolver annotations with
``typing.get_type_hints``.
"""

from collections.abc import Awaitable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from machine.errors import MachineError
from machine.learn import (
    Optimization,
    OptimizeOptions,
    Specialization,
    SpecializeOptions,
    TrainingCheck,
    TrainOptions,
    check_training,
    optimize,
    specialize,
    train,
)
from machine.ops import make_trainer, plan_learning
from machine.versions import Candidate
from machine.workspace import Workspace, folder_cases_file

from ._bounds import CasesFile, Focus, HarnessName, MachineName, ModelId, RecordId, Slug, TrainerName
from ._options import option_arguments, options_of
from ._results import Approval, NotAsked, OptimizeResult, SpecializeResult, TrainResult
from ._service import OnRun, can_elicit, tool_error, usd
from ._tools import USD, service

SPECIALIZE_ARGUMENTS = ("budget_usd", "slug", "model", "author_model", "harness")
OPTIMIZE_ARGUMENTS = ("budget_usd", "cases", "holdout", "model", "optimizer_model", "harness")
TRAIN_ARGUMENTS = ("budget_usd", "trainer", "resume", "harness")


def _asked(question: str, plan: str = "") -> Elicit[Approval]:
    return Elicit(f"{question}{plan} Allow it?", Approval)


def _planned(ws: Workspace, operation: str, name: str, **fields: Any) -> str:
    """The operation's plan as the form shows it, after the question (empty when it cannot be planned:
    the tool itself then refuses the call)."""
    try:
        return f" The plan: {plan_learning(ws, operation, name, **fields).describe()}."
    except MachineError:
        return ""


def _askable(
    ctx: Context,
    name: str,
    budget_usd: float,
    model: str | None,
    harness: str | None,
    *,
    own_model: bool = True,
) -> Workspace | NotAsked:
    """The call's workspace when the person can be asked and the call is one the tool would take; else
    why they are not asked (the tool then says what is wrong itself)."""
    if not can_elicit(ctx):
        return NotAsked(reason="the client cannot ask the person")
    try:
        return service(ctx).spending(name, budget_usd, model, harness, (), own_model=own_model)
    except ToolError:
        return NotAsked(reason="bad input: the tool refuses it")


def _spent(ws: Workspace) -> dict[str, float]:
    return {"budget_usd": ws.budget.usd or 0.0, "spent_usd": ws.budget.spent}


# -- specialize -------------------------------------------------------------------------------------


async def ask_specialize(
    parent: str,
    focus: str,
    budget_usd: USD,
    slug: str | None,
    author_model: str | None,
    cases: int,
    reuse_cases: bool,
    harness: str | None,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    ws = _askable(ctx, parent, budget_usd, None, harness, own_model=False)
    if isinstance(ws, NotAsked):
        return ws
    if not focus.strip():
        return NotAsked(reason="bad input: the tool refuses it")
    child = f"{parent}/{slug}" if slug else f"a child of {parent!r}"
    writes = "its machine files (keeping its cases)" if reuse_cases else f"its files and up to {cases} cases"
    author = author_model or "its own model"
    return _asked(
        f"Specialize machine {parent!r} for {focus.strip()!r}: the author machine ({author}) writes "
        f"{child}, {writes}, into the workspace (nothing is committed to git), spending at most "
        f"{usd(ws.budget.usd or 0.0)}.",
        _planned(
            ws,
            "specialize",
            parent,
            focus=focus,
            slug=slug,
            author_model=author_model,
            cases=cases,
            reuse_cases=reuse_cases,
        ),
    )


@option_arguments(SpecializeOptions)
async def specialize_machine(
    parent: MachineName,
    focus: Focus,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_specialize)],
    slug: Slug | None = None,
    model: ModelId | None = None,
    author_model: ModelId | None = None,
    harness: HarnessName | None = None,
    **options: Any,
) -> SpecializeResult:
    """Have the author machine write PARENT/SLUG, a child of `parent` for `focus`, and `cases` checked
    cases (split into cases.json and holdout.json by `holdout_share`), spending at most `budget_usd`
    (required; capped per call). `model` is the child's own model (default: the parent's); `slug`
    defaults to words of the focus; `reuse_cases` rewrites only an existing child's files. Nothing it
    writes is trusted: the child is loaded and its checks tried in a process of its own, every case is
    checked before it is kept. Needs the person's consent: they are asked, or their configured
    allowance must cover the budget. Returns the report `machine specialize --json` prints."""
    if not focus.strip():
        raise ToolError("focus is empty: say what the child specializes in, e.g. 'timezone bugs'")
    state = service(ctx)
    ws = state.spending(parent, budget_usd, None, harness, SPECIALIZE_ARGUMENTS, own_model=False)
    chosen = options_of(
        SpecializeOptions, SPECIALIZE_ARGUMENTS, focus=focus, slug=slug, model=model,
        author_model=author_model, **options,
    )  # fmt: skip

    def work(_on_run: OnRun) -> Awaitable[Specialization]:
        return specialize(ws, parent, chosen)

    what = f"specialize {parent!r} (at most {usd(ws.budget.usd or 0.0)})"
    report, info = await state.spend(
        ctx, ws, consent, tool="specialize", name=parent, what=what, work=work, accepts=SPECIALIZE_ARGUMENTS
    )
    return SpecializeResult(**dict(report), **_spent(ws), consent=info)


# -- optimize ---------------------------------------------------------------------------------------


async def ask_optimize(
    name: str,
    budget_usd: USD,
    trials: int,
    rounds: int,
    candidates: int,
    cases: str | None,
    holdout: str | None,
    model: str | None,
    harness: str | None,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    ws = _askable(ctx, name, budget_usd, model, harness)
    if isinstance(ws, NotAsked):
        return ws
    try:
        shown, held = optimize_files(ws, name, cases, holdout)
    except MachineError:
        return NotAsked(reason="bad input: the tool refuses it")
    unseen = (
        f"on the held-out cases of {held}, which the optimizer never sees"
        if held
        else "with no held-out cases, so a rewrite that memorized the cases cannot be told apart"
    )
    return _asked(
        f"Optimize machine {name!r}: ask the optimizer machine for {candidates} rewrites of its "
        f"instructions in each of {rounds} rounds, shown the cases of {shown}; measure each on them "
        f"({trials} trials a case) and {unseen}; and write one measured better to instructions.md as a "
        f"pending candidate (nothing is committed), spending at most {usd(ws.budget.usd or 0.0)}.",
        _planned(
            ws,
            "optimize",
            name,
            trials=trials,
            rounds=rounds,
            candidates=candidates,
            cases=cases,
            holdout=holdout,
            model=model,
        ),
    )


def optimize_files(
    ws: Workspace, name: str, cases: str | None, holdout: str | None
) -> tuple[str, str | None]:
    """The cases and held-out files an optimize call reads, each by name in the machine's own folder (as
    rehearse reads them); the held-out one None when the machine has none."""
    folder = ws.machines_dir / name
    shown = folder_cases_file(folder, name, cases, names_only=True).name
    if holdout is None and not (folder / "holdout.json").exists():
        return shown, None
    held = folder_cases_file(folder, name, holdout, default="holdout.json", names_only=True, what="held-out")
    return shown, held.name


@option_arguments(OptimizeOptions, leave=("concurrency",))
async def optimize_machine(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_optimize)],
    cases: CasesFile | None = None,
    holdout: CasesFile | None = None,
    optimizer_model: ModelId | None = None,
    model: ModelId | None = None,
    harness: HarnessName | None = None,
    **options: Any,
) -> OptimizeResult:
    """Ask the optimizer machine for rewrites of the machine's instructions and keep one only if it scores
    higher on the cases and on the held-out cases too (each by `min_z` standard errors, on enough cases),
    spending at most `budget_usd` (required; capped per call). `cases` and `holdout` name files in the
    machine's folder (default cases.json and holdout.json). A kept rewrite is written to instructions.md
    as a pending candidate (`candidate` in the result): make it live with commit, or undo it with revert.
    Needs the person's consent: they are asked, or their configured allowance must cover the budget.
    Reports progress per finished run; returns the report `machine optimize --json` prints."""
    state = service(ctx)
    ws = state.spending(name, budget_usd, model, harness, OPTIMIZE_ARGUMENTS)
    try:
        optimize_files(ws, name, cases, holdout)  # by name in its folder, never a path elsewhere
    except MachineError as error:
        raise tool_error(error, accepts=OPTIMIZE_ARGUMENTS) from error
    chosen = options_of(
        OptimizeOptions, OPTIMIZE_ARGUMENTS, cases=cases, holdout=holdout, optimizer_model=optimizer_model,
        model=model, **options,
    )  # fmt: skip

    def work(on_run: OnRun) -> Awaitable[Optimization]:
        return optimize(ws, name, chosen, on_run=on_run)

    what = f"optimize {name!r} (at most {usd(ws.budget.usd or 0.0)})"
    result, info = await state.spend(
        ctx, ws, consent, tool="optimize", name=name, what=what, work=work, accepts=OPTIMIZE_ARGUMENTS
    )
    return OptimizeResult(**dict(result.report), **_spent(ws), consent=info)


# -- train ------------------------------------------------------------------------------------------


async def ask_train(
    name: str,
    budget_usd: USD,
    samples: int,
    trials: int,
    trainer: str | None,
    resume: str | None,
    harness: str | None,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    ws = _askable(ctx, name, budget_usd, None, harness)
    if isinstance(ws, NotAsked):
        return ws
    sampling = f"sample {samples} new runs of each case, then " if samples else ""
    who = f"the {trainer} trainer" if trainer else "its trainer"
    return _asked(
        f"Train machine {name!r}: {sampling}fine-tune its model on its good runs with {who} and measure "
        "the checkpoint on holdout.json, proposing it as a pending candidate (the live version is "
        f"unchanged), spending at most {usd(ws.budget.usd or 0.0)}.",
        _planned(ws, "train", name, samples=samples, trials=trials, resume=resume),
    )


@option_arguments(TrainOptions, leave=("concurrency", "effort"))
async def train_machine(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_train)],
    trainer: TrainerName | None = None,
    resume: RecordId | None = None,
    harness: HarnessName | None = None,
    **options: Any,
) -> TrainResult:
    """Fine-tune the machine's model on its good runs (sampling `samples` more of each case first), then
    measure the checkpoint against the live version on holdout.json: a pending candidate, which commit
    makes live only if it passed the gate. Spends at most `budget_usd` (required; capped per call).
    `trainer` is tinker or local (default: local for a local: model, else tinker); `resume` continues a
    stopped training by its record id. Needs the person's consent: they are asked, or their configured
    allowance must cover the budget. Reports progress per finished run; returns the candidate's gate
    report."""
    state = service(ctx)
    ws = state.spending(name, budget_usd, None, harness, TRAIN_ARGUMENTS)
    chosen = options_of(TrainOptions, TRAIN_ARGUMENTS, resume=resume, **options)

    def work(on_run: OnRun) -> Awaitable[Candidate]:
        return train(ws, name, chosen, trainer=trainer, make_trainer=make_trainer, on_run=on_run)

    what = f"train {name!r} (at most {usd(ws.budget.usd or 0.0)})"
    candidate, info = await state.spend(
        ctx, ws, consent, tool="train", name=name, what=what, work=work, accepts=TRAIN_ARGUMENTS
    )
    return TrainResult(**dict(candidate.report), model=candidate.version.model, **_spent(ws), consent=info)


@option_arguments(TrainOptions, leave=("samples", "trials", "concurrency", "min_z", "pass_score", "resume"))
async def plan_training(
    name: MachineName, ctx: Context, trainer: TrainerName | None = None, **options: Any
) -> TrainingCheck:
    """Plan a training of the machine as `train` would, without training (a dry run): render every
    example the stored runs give, check it, count sequences, tokens and targets, price it and work out
    the plan (batch size, epochs, steps, learning rate, time), with why `train` would refuse it if it
    would. Samples, grades, spends and writes nothing."""
    state = service(ctx)
    state.known(name)
    chosen = options_of(TrainOptions, ("trainer",), **options)
    try:
        async with state.lock:
            return await check_training(state.ws, name, chosen, trainer=trainer, make_trainer=make_trainer)
    except MachineError as error:
        raise tool_error(error, accepts=("trainer",)) from error


def register_learning(server: MCPServer) -> None:
    """Add the tools that improve machines. Each spends and calls models (open world); specialize and
    optimize may rewrite files in the workspace (a child's files, instructions.md), so they are
    destructive; train only adds a pending candidate and its training record."""
    learning = {"read_only_hint": False, "idempotent_hint": False, "open_world_hint": True}
    server.tool(
        name="specialize",
        annotations=ToolAnnotations(
            title="Specialize a machine (spends, writes files)", destructive_hint=True, **learning
        ),
    )(specialize_machine)
    server.tool(
        name="optimize",
        annotations=ToolAnnotations(
            title="Optimize a machine's instructions (spends)", destructive_hint=True, **learning
        ),
    )(optimize_machine)
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
        name="train",
        annotations=ToolAnnotations(
            title="Train a machine's model (spends)", destructive_hint=False, **learning
        ),
    )(train_machine)
