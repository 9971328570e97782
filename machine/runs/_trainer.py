"""The Trainer protocol: what every trainer (Tinker's service, a local model) takes and gives back, so
training selects, records and gates the same way whichever one learns. Examples go in as OpenAI-shaped
chat conversations with the assistant messages to learn marked; a checkpoint the harnesses can sample and
per-step metrics come out. It sits beside the Harness protocol: trainers are adapters
(``machine.clients.TRAINERS``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import AliasChoices, Field

from machine.errors import BadInputError

from ._budget import Budget
from ._records import Model, counted


class TrainExample(Model):
    """One conversation to learn from: chat messages (system first), the tools offered, and the indices of
    the assistant messages that are targets (the others are context)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    targets: list[int]
    run_id: str = ""
    case_id: str | None = Field(default=None, validation_alias=AliasChoices("case_id", "case"))
    """The run's case (read as ``case`` from records written before it had this name)."""
    effort: float | None = None
    """The reasoning effort the run was sampled at: a renderer that writes effort into the prompt renders
    the example at it, so the model learns from the prompt it was given."""
    rejected: list[dict[str, Any]] | None = None
    """For a preference pair (DPO): the assistant message preferred less, in place of the one target
    (the last message, preferred), after the same prompt."""

    def sides(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """A preference pair's two conversations: the prompt with the chosen answer (its one target, last),
        and the same prompt with the rejected answer; an example that is no pair is refused."""
        if not self.rejected or len(self.targets) != 1:
            raise BadInputError(
                f"example of run {self.run_id!r} is no preference pair (one target, a rejected answer): "
                "DPO trains on the pairs export writes"
            )
        [target] = self.targets
        return self.messages[: target + 1], [*self.messages[:target], *self.rejected[:1]]


Method = Literal["sft", "dpo"]
"""``sft``: learn the examples' targets (cross-entropy); ``dpo``: learn to prefer each pair's chosen
answer over its rejected one, against the base model (direct preference optimization)."""
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
    """The dropout on the LoRA layers' input (None: the trainer's default, 0.05 on a local model)."""
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
    """DPO's beta: how far the trained model may move from its base to widen a pair's margin."""


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
    learning_rate: float
    lr_schedule: LrSchedule = "constant"
    trained_tokens: int
    """Tokens sent to the trainer in all: one pass's tokens times the epochs."""
    price_usd: float | None = None
    """What the steps cost at the training price (0 for a local model; None: the price is not listed)."""
    seconds: float | None = None
    """A rough estimate of the training's wall time (None: the trainer gives none)."""
    chosen: list[str] = Field(default_factory=list)
    """How each value not given was chosen, in words."""
    template: str = ""
    """What the renderer's prompts were checked against (the sampler's chat template), in words."""
    template_differs: bool = False
    """The renderer writes prompts the sampler does not: a checkpoint would be sampled on prompts it never
    learned (train refuses it unless forced)."""

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

    def lines(self) -> list[str]:
        """The plan as a person reads it, a line per part."""
        price = "price not listed" if self.price_usd is None else f"${self.price_usd:.4f}"
        price = "free" if self.price_usd == 0 else price
        time_s = "" if self.seconds is None else f", about {_duration(self.seconds)}"
        rendered = f"{self.whole_run} whole, {self.per_step} per step"
        dropped = f", {self.dropped} cut to nothing" if self.dropped else ""
        return [
            f"training plan: the {self.trainer} trainer on {self.base_model}",
            f"  data: {self.examples} examples ({rendered}{dropped}) -> {self.sequences} sequences, "
            f"{self.tokens} tokens, {self.target_tokens} of them targets",
            f"  schedule: {self.schedule()} (at least {self.min_steps} to learn)",
            f"  learning rate {self.learning_rate:g}{_moving(self.lr_schedule)}; "
            f"{self.trained_tokens} tokens trained, {price}{time_s}",
            *(f"  {line}" for line in self.chosen),
            *([f"  {self.template}"] if self.template else []),
        ]


def _moving(schedule: LrSchedule) -> str:
    return ", decaying linearly toward 0" if schedule == "linear" else ""


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


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


class Checkpoint(Model):
    """What training left: the model id a harness samples (``tinker://…/sampler_weights/…``, or a local
    adapter), its base, and where to resume from."""

    model: str
    base_model: str
    step: int
    state: str | None = None
    """Where the trainer's state (weights and optimizer) was saved, to resume from."""


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
trainers take (their ``takes``)."""


def refuse_untaken(trainer: Trainer, settings: TrainSettings) -> None:
    """A setting the trainer cannot honour is an error before anything runs, never silently ignored."""
    takes = set(getattr(trainer, "takes", ()))
    if settings.method != "sft" and settings.method not in takes:
        raise BadInputError(
            f"the {trainer.name} trainer does not train on preference pairs ({settings.method}): train "
            "with one that does (Tinker's, or the local trainer for a local: model), or learn the good runs "
            "alone (sft)"
        )
    given = [key for key in ADAPTER_SHAPE if getattr(settings, key) not in (None, 0) and key not in takes]
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
