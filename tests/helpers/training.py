"""Training in this process, for the tests of ``train``: a trainer that keeps the Trainer protocol the way a
real one must (it counts the tokens of the examples it is given, reserves each batch on the budget at the
base model's training price before "sending" it, reports every batch with a falling loss, and leaves a
checkpoint), a harness that answers by model so the checkpoint is known to be better or not, and a machine
folder to train (``caps``: answer the input in capital letters).

The checkpoint's model id starts with the trainer's ``becomes``: ``good…`` answers every case right,
anything else (the base model, ``same…``) answers right unless the input is one of the ``HARD`` ones."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from machine.budget import TRAINING, Budget
from machine.errors import BudgetExceeded
from machine.runs import HarnessRequest, HarnessResult, Message, Turn, Usage, run_loop
from machine.training import (
    Checkpoint,
    Prepared,
    RLSettings,
    RLUpdate,
    StepMetrics,
    TrainExample,
    TrainSettings,
)

BASE = "thinkingmachines/Inkling"
"""The live model: Tinker prices both its sampling and its training."""
HARD = frozenset({"dan", "dee", "dot", "dub", "dax", "dew"})
"""Inputs only a better model answers right: six, held out, so a checkpoint right on all of them is
enough evidence for the gate (six cases that changed at min_z 2)."""
CHARS_PER_TOKEN = 4
USAGE = Usage(input_tokens=1000, output_tokens=10)
"""What every reply of ``Tutored`` uses, so runs cost what the pricing table says."""

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"correct": "The reply is the input in capital letters."})
"""

MACHINE_PY = f"""\
from machine import check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

machine = define_machine(
    name="caps",
    intent="Repeat the input in capital letters.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "{BASE}"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"correct": check("caps", lambda r: r.output == r.input.upper())}}),
)
"""

TRAIN_CASES = [{"id": c, "input": c} for c in ("ann", "bob", "cat")]
HELD_OUT = [{"id": f"h-{c}", "input": c} for c in sorted(HARD)]


def make_caps(
    root: Path,
    *,
    cases: list[dict[str, str]] | None = None,
    holdout: list[dict[str, str]] | None = None,
    model_json: bytes | None = None,
) -> Path:
    """``root/machines/caps`` with its cases and held-out cases (and a model.json, given one)."""
    folder = root / "machines" / "caps"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY, encoding="utf-8")
    (folder / "rubric.py").write_text(RUBRIC_PY, encoding="utf-8")
    (folder / "instructions.md").write_text("Shout the input.\n", encoding="utf-8")
    (folder / "cases.json").write_text(json.dumps(cases or TRAIN_CASES), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps(holdout or HELD_OUT), encoding="utf-8")
    if model_json is not None:
        (folder / "model.json").write_bytes(model_json)
    return folder


def right(model: str, text: str) -> bool:
    return model.startswith("good") or text not in HARD


class Tutored:
    """Answers the input in capitals where ``right(model, input)``, else "no idea", using ``USAGE``;
    counts calls by model."""

    name = "tutored"

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    async def run(self, request: HarnessRequest) -> HarnessResult:
        self.calls[request.model] = self.calls.get(request.model, 0) + 1
        text = request.input.upper() if right(request.model, request.input) else "no idea"

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text), usage=USAGE)

        return await run_loop(request, reply)


def tokens_of(message: dict[str, Any]) -> int:
    """A message's tokens, counted as its characters (all of it: content, tool calls, reasoning) / 4."""
    return max(len(json.dumps(message, sort_keys=True)) // CHARS_PER_TOKEN, 1)


class StoppedAt(BudgetExceeded):
    """The budget refused a step; ``checkpoint`` is the last state saved before it, to resume from."""

    def __init__(self, message: str, checkpoint: Checkpoint | None) -> None:
        super().__init__(message)
        self.checkpoint = checkpoint


@dataclass
class Counting:
    """A trainer in this process. ``prepare`` counts every example's tokens (one sequence each, its
    assistant targets as target tokens); ``train`` makes one step of ``batch_size`` sequences at a time,
    each reserved at ``train:<base>`` before it runs, saves its state after every step, and returns a
    checkpoint named ``<becomes>:<record id>:<steps>``."""

    becomes: str = "good"
    name: str = "counting"
    prepared: list[list[TrainExample]] = field(default_factory=list)
    """The examples each ``prepare`` was given."""
    resumed: list[Checkpoint | None] = field(default_factory=list)
    """The checkpoint each ``train`` was given to resume from."""
    steps: list[int] = field(default_factory=list)
    """Every step run, in order, over all trainings."""
    report_saves_every: int = 10**9
    """Hand the state saved after every this many steps to ``on_saved`` (by default: never)."""

    def prepare(self, examples: Sequence[TrainExample], settings: TrainSettings) -> Prepared:
        self.prepared.append(list(examples))
        sizes = [
            (
                sum(tokens_of(m) for m in e.messages) + sum(tokens_of(t) for t in e.tools),
                sum(tokens_of(e.messages[i]) for i in e.targets),
            )
            for e in examples
        ]
        return Prepared(
            trainer=self.name,
            renderer="characters/4",
            examples=len(examples),
            sequences=len(sizes),
            whole_run=len(sizes),
            tokens=sum(t for t, _ in sizes),
            target_tokens=sum(t for _, t in sizes),
            learning_rate=settings.learning_rate or 1e-4,
            data=sizes,
        )

    async def train(
        self,
        prepared: Prepared,
        settings: TrainSettings,
        *,
        folder: Path,
        budget: Budget,
        on_step: Callable[[StepMetrics], None],
        resume: Checkpoint | None = None,
        on_saved: Callable[[Checkpoint], None] | None = None,
    ) -> Checkpoint:
        self.resumed.append(resume)
        sizes: list[tuple[int, int]] = prepared.data
        size = settings.batch_size
        batches = [
            (epoch, sizes[i : i + size])
            for epoch in range(1, settings.epochs + 1)
            for i in range(0, len(sizes), size)
        ]
        saved = resume
        for number, (epoch, batch) in enumerate(batches, start=1):
            if resume is not None and number <= resume.step:
                continue
            on_step(await self._step(number, epoch, batch, prepared, settings, budget, saved))
            saved = Checkpoint(
                model=f"state:{folder.name}:{number}", base_model=settings.base_model, step=number,
                state=f"state:{folder.name}:{number}",
            )  # fmt: skip
            if on_saved is not None and number % self.report_saves_every == 0:
                on_saved(saved)
        last = len(batches)
        return Checkpoint(
            model=f"{self.becomes}:{folder.name}:{last}",
            base_model=settings.base_model,
            step=last,
            state=f"state:{folder.name}:{last}",
        )

    async def _step(
        self,
        number: int,
        epoch: int,
        batch: list[tuple[int, int]],
        prepared: Prepared,
        settings: TrainSettings,
        budget: Budget,
        saved: Checkpoint | None,
    ) -> StepMetrics:
        tokens = sum(t for t, _ in batch)
        usage = Usage(input_tokens=tokens)
        try:
            async with budget.reserve(TRAINING + settings.base_model, usage, kind="training") as hold:
                self.steps.append(number)
                cost = hold.settle(usage)
        except BudgetExceeded as refused:
            raise StoppedAt(refused.message, saved) from refused
        return StepMetrics(
            step=number,
            epoch=epoch,
            loss=2.0 / number,
            sequences=len(batch),
            tokens=tokens,
            learning_rate=prepared.learning_rate,
            cost_usd=cost,
        )


class Practised:
    """The policy of a ``Practising`` session at one step: it answers right with a chance that grows with
    the steps trained (a quarter more each), drawn from the run's seed and the step, so the samples of a
    step are the same however often it is run; it remembers the runs it made for the update."""

    name = "practised"

    def __init__(self, session: Practice, step: int) -> None:
        self.session, self.step = session, step

    async def run(self, request: HarnessRequest) -> HarnessResult:
        chance = min(1.0, 0.25 + 0.25 * self.session.done)
        draw = random.Random(f"{request.seed}:{self.step}").random()
        text = request.input.upper() if draw < chance else "no idea"
        self.session.sampled.add(request.run_id)

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text), usage=USAGE)

        return await run_loop(request, reply)


@dataclass
class Practice:
    """An RL session in this process (``machine.training.RLSession``): each update reserves its tokens at
    ``train:<base>`` (ten a trained run), counts what it was given, and makes the policy likelier to
    answer right; the final checkpoint is ``good:…``, which answers every case right."""

    settings: TrainSettings
    folder: Path
    budget: Budget
    done: int = 0
    learning_rate: float = 1e-4
    save_every: int = 0
    sampled: set[str] = field(default_factory=set)
    updates: list[dict[str, float | None]] = field(default_factory=list)

    def sampler(self, step: int) -> Practised:
        return Practised(self, step)

    async def update(self, step: int, advantages: Mapping[str, float | None], rate: float) -> RLUpdate:
        trained = [a for a in advantages.values() if a]
        usage = Usage(input_tokens=10 * len(trained))
        async with self.budget.reserve(TRAINING + self.settings.base_model, usage, kind="training") as hold:
            cost = hold.settle(usage)
        self.updates.append(dict(advantages))
        missing = sum(run_id not in self.sampled for run_id in advantages)
        self.sampled.clear()
        self.done += 1
        loss = -sum(trained) / len(advantages) if trained else None
        return RLUpdate(
            loss=loss, sequences=len(trained), skipped=len(advantages) - len(trained), missing=missing,
            tokens=usage.input_tokens, cost_usd=cost,
        )  # fmt: skip

    def _checkpoint(self, kind: str) -> Checkpoint:
        name = f"{kind}:{self.folder.name}:{self.done}"
        return Checkpoint(model=name, base_model=self.settings.base_model, step=self.done, state=name)

    async def save(self) -> Checkpoint:
        return self._checkpoint("state")

    async def finish(self) -> Checkpoint:
        return self._checkpoint("good")

    async def close(self) -> None:
        return None


@dataclass
class Practising(Counting):
    """``Counting`` that also learns by RL (``Practice``); ``sessions`` are every one it opened."""

    name: str = "practising"
    takes: ClassVar[tuple[str, ...]] = ("rl",)
    sessions: list[Practice] = field(default_factory=list)

    async def rl(
        self,
        settings: TrainSettings,
        rl: RLSettings,
        *,
        folder: Path,
        budget: Budget,
        resume: Checkpoint | None = None,
    ) -> Practice:
        self.resumed.append(resume)
        session = Practice(settings, folder, budget, done=resume.step if resume else 0)
        self.sessions.append(session)
        return session
