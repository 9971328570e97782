"""The MCP tools that improve machines: specialize (the author writes a child and its cases), optimize
(rewrites of the instructions, kept only when measured better), and the training tools (``_train_tools``).
Each is a thin face over the operation ``machine specialize``/``optimize`` call: it checks the call, asks
for the person's consent as ``rehearse`` does, runs the operation under the server's lock with its
per-run progress, settles the spend and returns the operation's own report.

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
    optimize,
    specialize,
)
from machine.workspace import Workspace, folder_cases_file

from ._asking import askable, asked, planned, spent_of
from ._bounds import (
    AuthorModel,
    ChildFocus,
    ChildModel,
    ChildSlug,
    HoldoutCases,
    MachineName,
    OptimizerModel,
    RunCases,
    RunHarness,
    RunModel,
)
from ._options import accepted, option_arguments, options_of
from ._results import Approval, NotAsked, OptimizeResult, SpecializeResult
from ._server import service
from ._service import OnProgress, tool_error, usd
from ._tools import USD
from ._train_tools import register_training

SPECIALIZE_ARGUMENTS = accepted(SpecializeOptions, "budget_usd", "slug", "model", "author_model", "harness")
OPTIMIZE_LEFT = ("concurrency",)
OPTIMIZE_ARGUMENTS = accepted(
    OptimizeOptions,
    "budget_usd",
    "cases",
    "holdout",
    "model",
    "optimizer_model",
    "harness",
    leave=OPTIMIZE_LEFT,
)


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
    ws = askable(ctx, parent, budget_usd, None, harness, own_model=False)
    if isinstance(ws, NotAsked):
        return ws
    if not focus.strip():
        return NotAsked(reason="bad input: the tool refuses it")
    child = f"{parent}/{slug}" if slug else f"a child of {parent!r}"
    writes = "its machine files (keeping its cases)" if reuse_cases else f"its files and up to {cases} cases"
    author = author_model or "its own model"
    return asked(
        ctx,
        f"Specialize machine {parent!r} for {focus.strip()!r}: the author machine ({author}) writes "
        f"{child}, {writes}, into the workspace (nothing is committed to git), spending at most "
        f"{usd(ws.budget.usd or 0.0)}.",
        planned(
            ws,
            "specialize",
            parent,
            focus=focus,
            slug=slug,
            author_model=author_model,
            cases=cases,
            reuse_cases=reuse_cases,
        ),
        most_usd=ws.budget.usd or 0.0,
    )


@option_arguments(SpecializeOptions)
async def specialize_machine(
    parent: MachineName,
    focus: ChildFocus,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_specialize)],
    slug: ChildSlug = None,
    model: ChildModel = None,
    author_model: AuthorModel = None,
    harness: RunHarness = None,
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
        SpecializeOptions,
        SPECIALIZE_ARGUMENTS,
        focus=focus,
        slug=slug,
        model=model,
        author_model=author_model,
        **options,
    )

    def work(_on_run: OnProgress) -> Awaitable[Specialization]:
        return specialize(ws, parent, chosen)

    what = f"specialize {parent!r} (at most {usd(ws.budget.usd or 0.0)})"
    report, info = await state.spend(
        ctx, ws, consent, tool="specialize", name=parent, what=what, work=work, accepts=SPECIALIZE_ARGUMENTS
    )
    return SpecializeResult(**dict(report), **spent_of(ws), consent=info)


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
    min_z: float,
    allow_weak_gate: bool,
    ctx: Context,
) -> Elicit[Approval] | NotAsked:
    ws = askable(ctx, name, budget_usd, model, harness)
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
    return asked(
        ctx,
        f"Optimize machine {name!r}: ask the optimizer machine for {candidates} rewrites of its "
        f"instructions in each of {rounds} rounds, shown the cases of {shown}; measure each on them "
        f"({trials} trials a case) and {unseen}; and write one measured better to instructions.md as a "
        f"pending candidate (nothing is committed), spending at most {usd(ws.budget.usd or 0.0)}.",
        planned(
            ws,
            "optimize",
            name,
            trials=trials,
            rounds=rounds,
            candidates=candidates,
            cases=cases,
            holdout=holdout,
            model=model,
            min_z=min_z,
            allow_weak_gate=allow_weak_gate,
        ),
        most_usd=ws.budget.usd or 0.0,
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


@option_arguments(OptimizeOptions, leave=OPTIMIZE_LEFT)
async def optimize_machine(
    name: MachineName,
    budget_usd: USD,
    ctx: Context,
    consent: Annotated[ElicitationResult[Approval], Resolve(ask_optimize)],
    cases: RunCases = None,
    holdout: HoldoutCases = None,
    optimizer_model: OptimizerModel = None,
    model: RunModel = None,
    harness: RunHarness = None,
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
        OptimizeOptions,
        OPTIMIZE_ARGUMENTS,
        cases=cases,
        holdout=holdout,
        optimizer_model=optimizer_model,
        model=model,
        **options,
    )

    def work(on_run: OnProgress) -> Awaitable[Optimization]:
        return optimize(ws, name, chosen, on_run=on_run)

    what = f"optimize {name!r} (at most {usd(ws.budget.usd or 0.0)})"
    result, info = await state.spend(
        ctx, ws, consent, tool="optimize", name=name, what=what, work=work, accepts=OPTIMIZE_ARGUMENTS
    )
    return OptimizeResult(**dict(result.report), **spent_of(ws), consent=info)


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
    register_training(server, learning)
