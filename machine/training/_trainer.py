"""The Trainer protocol: what every trainer (Tinker's service, a local model) takes and gives back, so
training selects, records and gates the same way whichever one learns. Examples go in as OpenAI-shaped
chat conversations with the assistant messages to learn marked; a checkpoint the harnesses can sample and
per-step metrics come out. It sits beside the Harness protocol: trainers are adapters, found by name in
``TRAINERS`` (``_registry``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field

from machine._data import Model
from machine.budget import Budget
from machine.errors import BadInputError
from machine.runs import counted

from ._example import TrainExample
from ._rl import RLStepMetrics

Method = Literal["sft", "dpo", "rl"]
"""``sft``: learn the examples' targets (cross-entropy); ``dpo``: learn to prefer each pair's chosen
answer over its rejected one, against the model the training starts from (direct preference
optimization); ``rl``: learn from the policy's own sampled runs, rewarded by the machine's evaluator."""
LrSchedule = Literal["constant", "linear"]
"""``constant``: the same rate every step; ``linear``: from the rate at the first step down toward 0 at
the last, so the final steps settle the model instead of pulling it toward their own batch."""


def learning_rate_at(rate: float, step: int, steps: int, schedule: LrSchedule) -> float:
    """Step ``step``'s (1-based) learning rate of ``steps`` on ``schedule``."""
    if schedule == "linear":
        return rate * (1 - (step - 1) / max(steps, 1))
    return rate


class TrainSettings(Model):
    """How to train: the base model and the hyperparameters (None: the trainer's default for the base)."""

    base_model: str
    epochs: int = 1
    learning_rate: float | None = None
    rank: int | None = None
    """The LoRA rank (None: the trainer's default, 32 on Tinker, 16 on a local model)."""
    batch_size: int = 8
    """Sequences per optimizer step."""
    effort: float | None = None
    """The reasoning effort examples are rendered at when their run recorded none."""
    seed: int = 0
    max_length: int | None = None
    """Tokens a training sequence is cut to (None: uncut)."""
    lora_alpha: int | None = None
    """The LoRA scale (None: the trainer's default, twice the rank on a local model). Only a trainer
    that ``takes`` it accepts it; the others refuse it."""
    lora_dropout: float | None = None
    """The dropout on the LoRA layers' input (None: the trainer's default, 0.05 on a local model for
    SFT, none for DPO, whose loss compares the policy with the reference token for token)."""
    target_modules: list[str] | None = None
    """The modules the adapter wraps, by name (None: the trainer's default, the attention projections)."""
    kl: float | None = None
    """The weight of a penalty on the trained model's divergence from its base (KL per target token),
    which holds what the examples do not teach in place (None or 0: none)."""
    lr_schedule: LrSchedule = "constant"
    """How the learning rate moves over the steps (``learning_rate_at``)."""
    method: Method = "sft"
    """What the examples teach: their targets (``sft``), or a preference within each pair (``dpo``)."""
    beta: float = 0.1
    """DPO's beta: how far the trained model may move from its reference to widen a pair's margin."""
    rpo_alpha: float | None = None
    """DPO: the weight of the chosen answers' own cross-entropy (per token) added to the loss, as RPO
    and TRL's ``rpo_alpha`` do, so the chosen answers stay likely while the margin widens (None or 0:
    none)."""
    start: Checkpoint | None = None
    """The checkpoint training starts from, and DPO's reference: the live version's when it is a
    fine-tune of ``base_model`` (a local adapter, a Tinker state), so DPO builds on what is live and is
    measured against it (None: a new adapter on the base model, the base the reference)."""


class Prepared(Model):
    """The examples as the trainer will send them: how they were rendered, and their size."""

    trainer: str
    renderer: str
    effort: float | None = None
    """The effort the renderer rendered at (None: the renderer takes none)."""
    examples: int
    sequences: int
    """Training sequences: one per example rendered whole, one per target step otherwise."""
    whole_run: int = 0
    """Examples trained as one sequence with every target step in it (the renderer's prompts for each
    step are token prefixes of the whole run's rendering, checked per example)."""
    per_step: int = 0
    dropped: int = 0
    """Sequences left out because cutting them to ``max_length`` left no target token in them."""
    tokens: int = 0
    target_tokens: int = 0
    learning_rate: float
    learning_rate_is: str = ""
    """Where the learning rate came from, in words, when it was not given (``the cookbook's for …``)."""
    template: str = ""
    """What the renderer's prompts were checked against (the sampler's chat template), in words."""
    template_differs: bool = False
    """The renderer writes prompts the sampler does not: a checkpoint would be sampled on prompts it never
    learned (train refuses it unless forced)."""
    seconds_per_token: float | None = None
    """The trainer's rough wall time per token trained, for the plan's estimate (None: it has none)."""
    run_seconds: float | None = None
    """The trainer's rough wall time of one run of the model it trains, sampled or measured on the
    held-out cases beside others as a training does, for the plan's estimate (None: it has none)."""
    data: Any = Field(default=None, exclude=True)
    """The trainer's own form of the sequences (not recorded)."""


class TrainingPlan(Model):
    """What a training will do, worked out from its prepared examples before its first step and recorded
    with it: the data, the schedule (batch size, epochs, steps), the learning rate, what it costs, and how
    each default was chosen. ``steps`` below ``min_steps`` is a plan that cannot move the model."""

    trainer: str
    base_model: str
    renderer: str = ""
    examples: int
    sequences: int
    whole_run: int = 0
    per_step: int = 0
    dropped: int = 0
    tokens: int
    """Tokens of one pass over the sequences."""
    target_tokens: int
    batch_size: int
    epochs: int
    steps_per_epoch: int
    steps: int
    min_steps: int
    """The steps a plan needs to learn (0: no minimum, as for DPO, which starts from a model that
    already answers and collapses when pushed too far)."""
    learning_rate: float
    lr_schedule: LrSchedule = "constant"
    trained_tokens: int
    """Tokens sent to the trainer in all: one pass's tokens times the epochs."""
    price_usd: float | None = None
    """What the steps cost at the training price (0 for a local model; None: the price is not listed)."""
    seconds: float | None = None
    """A rough estimate of the training steps' wall time (None: the trainer gives none)."""
    sample_runs: int = 0
    """Runs sampled before the training (``samples`` of each case; none on a resumed training)."""
    measure_runs: int = 0
    """Held-out runs measured: the live version's before the first step and the checkpoint's after the
    last (``trials`` of each held-out case on each side, at most: stored runs are reused)."""
    run_seconds: float | None = None
    """A rough estimate of one run's wall time on the base model with the training's concurrency (None:
    the trainer gives none)."""
    chosen: list[str] = Field(default_factory=list)
    """How each value not given was chosen, in words."""
    template: str = ""
    """What the renderer's prompts were checked against (the sampler's chat template), in words."""
    template_differs: bool = False
    """The renderer writes prompts the sampler does not: a checkpoint would be sampled on prompts it never
    learned (train refuses it unless forced)."""
    method: Method = "sft"
    beta: float | None = None
    """DPO's beta (None: SFT)."""
    start: str | None = None
    """The model training starts from, DPO's reference too (None: a new adapter on the base)."""

    def what(self) -> str:
        """For DPO, ``DPO at β 0.1 from MODEL (the live version, also the reference): `` (else nothing),
        to open the plan's first line: the method, its β and what it starts from are decided here."""
        if self.method != "dpo":
            return ""
        start = f"{self.start} (the live version, also the reference)" if self.start else "the base model"
        return f"DPO at β {self.beta or 0:g} from {start}: "

    @property
    def enough(self) -> bool:
        """Whether the plan has the optimizer steps a model needs to learn anything."""
        return self.steps >= self.min_steps

    def schedule(self) -> str:
        """``32 optimizer steps (8 epochs x 4 batches of 4 over 16 sequences)``."""
        batches = counted(self.steps_per_epoch, "batch", "batches")
        return (
            f"{counted(self.steps, 'optimizer step')} ({counted(self.epochs, 'epoch')} x {batches} of "
            f"{self.batch_size} over {counted(self.sequences, 'sequence')})"
        )

    @property
    def total_seconds(self) -> float | None:
        """The whole training's rough wall time: sampling, the held-out runs and the steps (None: not
        estimated)."""
        if self.seconds is None:
            return None
        runs = self.sample_runs + self.measure_runs
        return self.seconds + (runs * self.run_seconds if self.run_seconds is not None else 0.0)

    def timing(self) -> str | None:
        """The estimate in words, part by part: ``time: about 2 min in all: 18 held-out runs about 40 s,
        32 steps about 44 s`` (None: the trainer gives none)."""
        if self.seconds is None:
            return None
        steps = f"{counted(self.steps, 'step')} about {_duration(self.seconds)}"
        runs = [
            (n, f"{what} run") for n, what in ((self.sample_runs, "sampled"), (self.measure_runs, "held-out"))
        ]
        runs = [(n, what) for n, what in runs if n]
        if self.run_seconds is None:
            unknown = " and ".join(counted(n, what) for n, what in runs)
            return f"time: {steps}" + (f"; {unknown} not estimated" if unknown else "")
        parts = [f"{counted(n, what)} about {_duration(n * self.run_seconds)}" for n, what in runs]
        return f"time: about {_duration(self.total_seconds or 0.0)} in all: {', '.join([*parts, steps])}"

    def lines(self) -> list[str]:
        """The plan as a person reads it, a line per part."""
        price = "price not listed" if self.price_usd is None else f"${self.price_usd:.4f}"
        price = "free" if self.price_usd == 0 else price
        timing = self.timing()
        rendered = f"{self.whole_run} whole, {self.per_step} per step"
        dropped = f", {self.dropped} cut to nothing" if self.dropped else ""
        return [
            f"training plan: {self.what()}the {self.trainer} trainer on {self.base_model}",
            f"  data: {self.examples} examples ({rendered}{dropped}) -> {self.sequences} sequences, "
            f"{self.tokens} tokens, {self.target_tokens} of them targets",
            f"  schedule: {self.schedule()}{_least(self.min_steps)}",
            f"  learning rate {self.learning_rate:g}{_moving(self.lr_schedule)}; "
            f"{self.trained_tokens} tokens trained, {price}",
            *([f"  {timing}"] if timing else []),
            *(f"  {line}" for line in self.chosen),
            *([f"  {self.template}"] if self.template else []),
        ]


def _least(steps: int) -> str:
    return f" (at least {steps} to learn)" if steps else ""


def _moving(schedule: LrSchedule) -> str:
    return ", decaying linearly toward 0" if schedule == "linear" else ""


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class Phase(Model):
    """A counted part of a long operation, as it begins: what it does, in words, and how many runs or
    optimizer steps it takes, so a face can show how far it got (a bar, or a line each)."""

    what: str
    total: int
    unit: Literal["runs", "steps"] = "runs"
    done: int = 0
    """Of ``total``, done before this phase began (the steps a resumed training had trained)."""


class StepMetrics(Model):
    """One optimizer step, as ``metrics.jsonl`` keeps it."""

    step: int
    epoch: int
    loss: float | None = None
    sequences: int = 0
    tokens: int = 0
    learning_rate: float = 0.0
    seconds: float = 0.0
    cost_usd: float = 0.0
    chosen_drift: float | None = None
    """DPO: the mean over the step's pairs of log π(chosen) − log π_ref(chosen), summed over the chosen
    answer's tokens, before the step: how far the model left its reference, the collapse signal. Well
    below 0, it widens its margins by making its own good answers less likely too; tens of nats above,
    it memorises the pairs (+31.6 at SFT's defaults, when 2 of 9 held-out replies fell into a loop)."""
    rl: RLStepMetrics | None = None
    """RL: what the step's rollouts were rewarded and what its update saw (None for SFT and DPO)."""


class Checkpoint(Model):
    """What training left: the model id a harness samples (``tinker://…/sampler_weights/…``, or a local
    adapter), its base, and where to resume from."""

    model: str
    base_model: str
    step: int
    state: str | None = None
    """Where the trainer's state (weights and optimizer) was saved, to resume from."""


TrainSettings.model_rebuild()  # its ``start`` is a Checkpoint


def epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    """The order epoch ``epoch`` walks ``count`` sequences in: a shuffle drawn from the training's seed
    and the epoch, so every trainer shuffles alike, and a resumed training has the batches it would have
    had."""
    order = list(range(count))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order


def epoch_batches(count: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Epoch ``epoch``'s batches: its order (``epoch_order``) in as many batches as ``batch_size`` needs,
    of sizes that differ by one at most. 209 sequences in batches of 8 are 27 batches of 7 or 8, not 26
    of 8 and a last of 1, whose step at the full learning rate would pull the model toward one sequence."""
    order = epoch_order(count, seed, epoch)
    batches = -(-count // max(batch_size, 1))
    if not batches:
        return []
    edges = [-(-i * count // batches) for i in range(batches + 1)]  # the larger batches first
    return [order[edges[i] : edges[i + 1]] for i in range(batches)]


ADAPTER_SHAPE = {
    "lora_alpha": "a LoRA alpha",
    "lora_dropout": "a LoRA dropout",
    "target_modules": "target modules",
    "kl": "a KL penalty",
}
"""Settings beyond the common ones (the adapter's shape past its rank, a KL penalty), which only some
trainers take (their ``takes``: the setting's name, or ``method:name`` for that method alone, as
``rl:kl``)."""


def refuse_untaken(trainer: Trainer, settings: TrainSettings) -> None:
    """A setting the trainer cannot honour is an error before anything runs, never silently ignored."""
    takes = set(getattr(trainer, "takes", ()))
    if settings.method == "dpo" and "dpo" not in takes:
        raise BadInputError(
            f"the {trainer.name} trainer does not train on preference pairs (dpo): train with one that "
            "does (Tinker's, or the local trainer for a local: model), or learn the good runs alone (sft)"
        )
    if settings.method == "rl" and "rl" not in takes:
        raise BadInputError(
            f"the {trainer.name} trainer does not learn by reinforcement (rl): train with one that does "
            "(Tinker's, or the local trainer for a local: model), or learn the good runs alone (sft)"
        )
    given = [
        key
        for key in ADAPTER_SHAPE
        if getattr(settings, key) not in (None, 0) and not {key, f"{settings.method}:{key}"} & takes
    ]
    if given:
        shown = ", ".join(ADAPTER_SHAPE[key] for key in given)
        raise BadInputError(
            f"the {trainer.name} trainer does not take {shown} (it trains a rank-r adapter on the "
            "examples' cross-entropy alone): leave them out, or train a local: model with the local trainer",
        )


@runtime_checkable
class Trainer(Protocol):
    """A way to fine-tune a model on examples."""

    name: str

    def prepare(self, examples: Sequence[TrainExample], settings: TrainSettings) -> Prepared:
        """Render the examples for the base model and decide whole-run or per-step for each."""
        ...

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
        """Train, reserving each step's tokens against ``budget`` before it is sent, reporting each
        step, and saving the sampler checkpoint; ``resume`` continues from a saved state. Each state
        saved along the way is handed to ``on_saved`` at once, so a training stopped from outside (or
        killed) is recorded as far as it got and resumes from there."""
        ...
