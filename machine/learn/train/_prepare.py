"""What a training knows before it spends: the machine and its base model, the held-out cases, the trainer,
the runs selected and the examples made of them, rendered by the trainer and planned (``schedule``).
``train`` and ``check_training`` (a dry run, a smoke run) share it, so a dry run shows exactly the plan the
training would follow."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from machine.budget import TRAINING, price_of
from machine.errors import BadInputError, Fix
from machine.runs import Redactor, Run, openai_tools
from machine.spec import VERSIONS_FILE, Case, Machine, read_book
from machine.training import (
    Checkpoint,
    Prepared,
    Trainer,
    TrainExample,
    TrainingPlan,
    TrainSettings,
    make_trainer,
    refuse_untaken,
)
from machine.workspace import Workspace, held_out

from ._estimate import with_runs
from ._live_checkpoint import live_checkpoint
from ._options import TrainOptions
from ._pairs import iter_pairs, no_pairs
from ._record import Chosen
from ._run_example import example_of
from ._schedule import applied, refuse_short, schedule
from ._select import Funnel, Selection, sources

MakeTrainer = Callable[[str | None, str, Path], Trainer]
"""Makes the trainer named (None: the one for the base model) for a base model in a workspace (its root)."""

ChooseSource = Callable[[dict[str, int]], str | None]
"""Asked when the runs selected come from several sources and nothing named one, with each source's count
(``teacher on scripted``): the source to learn from, ``ALL_SOURCES``, or None to refuse."""
ALL_SOURCES = "all"


@dataclass(frozen=True)
class Target:
    """The machine a training is for, and what it is measured on."""

    spec: Machine
    base: str
    """The base model its live version trains."""
    own_model: str
    """The live version's model: the runs learned from are its own unless ``any_model``."""
    held: list[Case]
    held_path: Path
    start: Checkpoint | None = None
    """The live version's checkpoint, when it is a fine-tune of ``base`` (``_live_checkpoint``): DPO starts
    there."""


@dataclass(frozen=True)
class Ready:
    """The examples selected, rendered and planned: what the trainer is given."""

    runs: list[Run]
    examples: list[TrainExample]
    chose: Chosen
    redacted: int
    prepared: Prepared
    plan: TrainingPlan
    settings: TrainSettings
    """The settings at the examples' effort, with the plan's batch size and epochs."""


def held_out_cases(ws: Workspace, name: str) -> tuple[list[Case], Path]:
    """The held-out cases training measures its checkpoint on, and their file; refused when there are none."""
    found = held_out(ws, name)
    if found is None or found.path is None:
        path = ws.cases_file(name, None, default="holdout.json")
        raise BadInputError(
            f"machine {name!r} has no held-out cases ({path}): training needs some to measure the checkpoint "
            "on cases it never learned from; write holdout.json"
        )
    return found.cases, found.path


def target(ws: Workspace, name: str) -> Target:
    """The machine and the base model its live version trains, read without recording anything (the
    first version is recorded once the training is under way)."""
    spec = ws.reload(name)
    if spec.counterpart is not None:
        raise BadInputError(
            f"machine {name!r} holds conversations with a counterpart; train takes single runs"
        )
    held, path = held_out_cases(ws, name)
    book = read_book(ws.machines_dir / name / VERSIONS_FILE)
    if book is None:
        return Target(spec, spec.model, spec.model, held, path)
    live = book.live
    return Target(spec, live.base_model or live.model, live.model, held, path, live_checkpoint(ws, live))


def trainer_for(
    trainer: Trainer | str | None, make: MakeTrainer | None, settings: TrainSettings, ws: Workspace
) -> Trainer:
    """The trainer given, else the one ``make(name, base, root)`` makes, else the workspace's (as it
    supplies its harness: ``Adapters.trainer``, by default the registered trainers' ``make_trainer``);
    one that cannot honour the settings is refused."""
    if not isinstance(trainer, Trainer):
        made = make or ws.adapters.trainer or make_trainer
        trainer = made(trainer, settings.base_model, ws.root)
    refuse_untaken(trainer, settings)
    return trainer


def ready(
    ws: Workspace,
    at: Target,
    o: TrainOptions,
    trainer: Trainer,
    settings: TrainSettings,
    *,
    refuse: bool = True,
    choose: ChooseSource | None = None,
) -> Ready:
    """Select the runs, make and render the examples, and plan the training; with ``refuse``, a plan too
    short to learn is refused here (unless ``force``), before the first step. ``choose`` is asked which
    source to learn from when the selection mixes several."""
    runs, examples, chose, redacted = _examples(ws, at, o, choose)
    settings = _at_their_effort(settings, examples)
    prepared = trainer.prepare(examples, settings)
    start = settings.start.model if settings.start is not None else None
    plan = schedule(prepared, o, at.base, price=price_of(TRAINING + at.base), start=start)
    plan = with_runs(plan, prepared, o, len(ws.cases(at.spec.name)) if o.samples else 0, len(at.held))
    if refuse:
        refuse_short(plan, o)
    return Ready(runs, examples, chose, redacted, prepared, plan, applied(plan, settings))


def _examples(
    ws: Workspace, at: Target, o: TrainOptions, choose: ChooseSource | None
) -> tuple[list[Run], list[TrainExample], Chosen, int]:
    """The runs selected, the examples made of them, the selection as the record pins it, and how many
    secrets were redacted from the examples (those of the environment and the workspace's .env)."""
    spec = at.spec
    redactor = Redactor.here(ws.root)
    if o.method == "dpo":
        return _pair_examples(ws, at, o, redactor)
    selection = Selection(
        spec.rubric.fingerprint,
        min_score=o.min_score,
        best=o.best_of,
        held_out=at.held,
        own_model=None if o.any_model or o.from_model else at.own_model,
        from_model=o.from_model,
        since=o.from_suite,
    )
    funnel = Funnel()
    runs = list(selection.from_store(ws.store, spec.name, funnel))
    examples = [e for e in (example_of(run, spec, redactor=redactor) for run in runs) if e is not None]
    if not examples:
        raise funnel.empty_error(spec.name)
    found = sources(runs)
    named = _one_source(spec.name, found, o, choose)
    if named is not o:
        return _examples(ws, at, named, None)
    chose = Chosen(
        samples=o.samples,
        min_score=o.min_score,
        best_of=o.best_of,
        any_model=o.any_model,
        own_model=selection.own_model,
        from_model=o.from_model,
        from_suite=o.from_suite,
        all_sources=o.all_sources,
        sources=found,
        held_out=sorted(c.id for c in at.held),
        run_ids=[e.run_id for e in examples],
    )
    return runs, examples, chose, redactor.count


def _pair_examples(
    ws: Workspace, at: Target, o: TrainOptions, redactor: Redactor
) -> tuple[list[Run], list[TrainExample], Chosen, int]:
    """The preference pairs of the machine's runs as examples to learn with DPO: the prompt and the
    chosen answer, its target, with the rejected answer beside it."""
    tools = openai_tools(at.spec.tools)
    examples, prompts = [], {}
    read: Counter[str] = Counter()
    for pair in iter_pairs(ws, at.spec, o.min_score, at.held, read):
        prompt = pair.prompt_messages()
        chosen, rejected = (
            {"role": "assistant", "content": side[1]} for side in (pair.chosen, pair.rejected)
        )
        examples.append(
            TrainExample(
                messages=redactor.data([*prompt, chosen]),
                tools=tools,
                targets=[len(prompt)],
                rejected=redactor.data([rejected]),
                run_id=pair.chosen[0],
                case_id=pair.prompt.case_id,
                effort=pair.prompt.effort,
            )
        )
        prompts[pair.prompt.id] = pair.prompt
    if not examples:
        raise no_pairs(at.spec.name, read["stored"])
    chose = Chosen(
        samples=o.samples,
        min_score=o.min_score,
        best_of=None,
        any_model=True,
        own_model=None,
        sources={"preference pairs": len(examples)},
        held_out=sorted(c.id for c in at.held),
        run_ids=[e.run_id for e in examples],
    )
    return list(prompts.values()), examples, chose, redactor.count


def chosen_before(o: TrainOptions, before: Chosen) -> TrainOptions:
    """The options of a resumed training, learning from the source its start chose, asked then and not
    again (a terminal's answer is in its record, not in the flags given to resume)."""
    if not o.any_model or o.from_model or o.from_suite or o.all_sources:
        return o
    if before.from_model is not None:
        return o.model_copy(update={"from_model": before.from_model})
    return o.model_copy(update={"all_sources": True}) if before.all_sources else o


def _one_source(
    name: str, found: dict[str, int], o: TrainOptions, choose: ChooseSource | None
) -> TrainOptions:
    """With ``any_model`` and nothing naming the source, runs of several models or harnesses are refused,
    naming each, unless ``choose`` names one (the options returned then say so): throwaway runs of another
    experiment must not make up what the model learns."""
    if len(found) < 2 or not o.any_model or o.from_model or o.from_suite or o.all_sources:
        return o
    picked = choose(found) if choose is not None else None
    if picked == ALL_SOURCES:
        return o.model_copy(update={"all_sources": True})
    if picked is not None and picked in found:
        return o.model_copy(update={"from_model": picked.rsplit(" on ", 1)[0]})
    listed = ", ".join(f"{count} of {source}" for source, count in found.items())
    biggest = next(iter(found)).rsplit(" on ", 1)[0]
    raise BadInputError(
        f"the runs selected to train {name!r} come from {len(found)} sources ({listed}): name the one to "
        "learn from",
        fixes=[
            Fix("from_model", biggest, "to learn from that model's runs alone"),
            Fix("from_suite", "ID", "to learn from one suite's runs"),
            Fix("all_sources", None, "to learn from all of them"),
        ],
    )


def _at_their_effort(settings: TrainSettings, examples: list[TrainExample]) -> TrainSettings:
    """The settings with the effort the runs were sampled at, when none was given: a renderer that
    writes the effort into the prompt must render the prompt the model was given."""
    if settings.effort is not None:
        return settings
    efforts = sorted({e.effort for e in examples if e.effort is not None})
    if len(efforts) > 1:
        shown = ", ".join(f"{e:g}" for e in efforts)
        one = Fix("effort", f"{efforts[0]:g}", "to train at one (and select runs sampled at it)")
        raise BadInputError(
            f"the runs selected were sampled at different reasoning efforts ({shown}), and a model learns "
            "the prompt it is shown",
            fixes=[one],
        )
    return settings.model_copy(update={"effort": efforts[0]}) if efforts else settings
