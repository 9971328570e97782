"""The training plan: how many optimizer steps, in batches of what size, over how many epochs, at what
learning rate, worked out from the prepared examples before the first step.

The rule for what is not given: a batch of at most 8 sequences, small enough that an epoch holds at least
4 steps where the data allows (never under 2); then epochs raised until the steps reach ``MIN_STEPS``,
capped at ``MAX_EPOCHS`` and at ``TOKEN_CAP`` tokens trained. A LoRA adapter starts at zero and moves a
learning rate's width a step, so one or two steps leave the model where it was whatever the rate: trained
on 16 examples at the old defaults (1 epoch of 8, 2 steps) a small local model learned nothing, and at
30 steps it learned the rule. A plan that still falls short is refused, naming the flags that fix it,
unless forced.

DPO is planned as TRL plans it: ``DPO_EPOCHS`` passes (TRL's default; tinker-cookbook's is one), never
raised toward a minimum of steps. It starts from a model that already answers (the live checkpoint), and
pushed too far it collapses: raised to 8 epochs of 16 pairs (at 2e-4), a small model answered 8 of 9
held-out cases with the same "Aye! Aye! Aye!".
"""

from __future__ import annotations

import math

from machine.budget import Price
from machine.errors import BadInputError, Fix
from machine.runs import Usage
from machine.training import Prepared, TrainingPlan, TrainSettings

from ._options import MAX_EPOCHS, TrainOptions

MIN_STEPS = 30
"""Optimizer steps a plan needs before it can be expected to move the model."""
MAX_BATCH = 8
MIN_BATCH = 2
STEPS_AN_EPOCH = 4
"""The least steps in an epoch the default batch size leaves, where the data has enough sequences."""
DPO_EPOCHS = 3
"""Passes over the preference pairs when none are given."""
TOKEN_CAP = 2_000_000
"""The most tokens a default plan trains on (raising epochs stops there): a large data set is trained for
one pass or a few, not 30 steps' worth of passes."""


def schedule(
    prepared: Prepared,
    options: TrainOptions,
    base_model: str,
    *,
    price: Price | None = None,
    start: str | None = None,
) -> TrainingPlan:
    """The plan for training ``prepared`` with ``options``: each value given is kept, each other one
    chosen by the rule (see the module), saying how; ``start`` is the model it starts from (None: the
    base)."""
    count = max(prepared.sequences, 1)
    chosen: list[str] = []
    batch = options.batch_size
    if batch is None:
        batch = min(MAX_BATCH, max(MIN_BATCH, math.ceil(count / STEPS_AN_EPOCH)))
        chosen.append(f"batch size {batch}: at most {MAX_BATCH}, at least {STEPS_AN_EPOCH} steps an epoch")
    per_epoch = math.ceil(count / batch)
    dpo = options.method == "dpo"
    epochs = options.epochs or _epochs(per_epoch, prepared.tokens, dpo, chosen)
    if options.lr is None and prepared.learning_rate_is:
        chosen.append(f"learning rate {prepared.learning_rate:g}: {prepared.learning_rate_is}")
    trained = prepared.tokens * epochs
    # DPO as a custom loss: a forward pass before each forward and backward, and the base's pass once
    charged = 2 * trained + prepared.tokens if options.method == "dpo" else trained
    return TrainingPlan(
        trainer=prepared.trainer,
        base_model=base_model,
        renderer=prepared.renderer,
        template=prepared.template,
        template_differs=prepared.template_differs,
        examples=prepared.examples,
        sequences=prepared.sequences,
        whole_run=prepared.whole_run,
        per_step=prepared.per_step,
        dropped=prepared.dropped,
        tokens=prepared.tokens,
        target_tokens=prepared.target_tokens,
        batch_size=batch,
        epochs=epochs,
        steps_per_epoch=per_epoch,
        steps=per_epoch * epochs,
        min_steps=0 if dpo else MIN_STEPS,
        learning_rate=prepared.learning_rate,
        lr_schedule=options.lr_schedule,
        trained_tokens=trained,
        price_usd=None if price is None else price.cost(Usage(input_tokens=charged)),
        seconds=None if prepared.seconds_per_token is None else prepared.seconds_per_token * trained,
        chosen=chosen,
        method=options.method,
        beta=options.beta if dpo else None,
        start=start,
    )


def _epochs(per_epoch: int, tokens: int, dpo: bool, chosen: list[str]) -> int:
    """The epochs when none are given, said in ``chosen``: DPO's few; else raised to ``MIN_STEPS``."""
    if dpo:
        chosen.append(
            f"epochs {DPO_EPOCHS}: DPO's default, as TRL's (more passes over few pairs collapse a model)"
        )
        return DPO_EPOCHS
    wanted = math.ceil(MIN_STEPS / per_epoch)
    by_tokens = max(1, TOKEN_CAP // max(tokens, 1))
    epochs = max(1, min(wanted, MAX_EPOCHS, by_tokens))
    cap = "" if epochs == wanted else f" (capped at {epochs}: {_cap(wanted, by_tokens)})"
    chosen.append(f"epochs {epochs}: raised until at least {MIN_STEPS} steps{cap}")
    return epochs


def _cap(wanted: int, by_tokens: int) -> str:
    if by_tokens < min(wanted, MAX_EPOCHS):
        return f"{TOKEN_CAP} tokens trained at most"
    return f"{MAX_EPOCHS} epochs at most"


def applied(plan: TrainingPlan, settings: TrainSettings) -> TrainSettings:
    """The settings the trainer is given: the plan's batch size and epochs."""
    return settings.model_copy(update={"batch_size": plan.batch_size, "epochs": plan.epochs})


def refuse_unreachable(options: TrainOptions, cases: int) -> None:
    """Before any run is sampled: refuse options that fall short even if each of the ``cases`` gives its
    ``best_of`` examples, so a training that would be refused is refused before it spends."""
    most = cases * options.best_of
    bound = Prepared(trainer="", renderer="", examples=most, sequences=most, learning_rate=0.0)
    refuse_short(schedule(bound, options, ""), options, at_most=True)


def refuse_short(plan: TrainingPlan, options: TrainOptions, *, at_most: bool = False) -> None:
    """Refuse a plan that cannot teach, unless forced: one below ``MIN_STEPS``, with the flags that reach it
    (more epochs, a smaller batch, more data) or ``force``, and one whose renderer writes prompts the
    sampler does not; ``at_most``: the plan is a bound, worked out before sampling."""
    if options.force:
        return
    if plan.template_differs:
        raise BadInputError(
            f"{plan.template}; a checkpoint trained on these prompts would be sampled on others",
            fixes=[Fix("force", None, "to train on them anyway")],
        )
    if plan.enough:
        return
    fixes: list[Fix] = []
    epochs = math.ceil(plan.min_steps / plan.steps_per_epoch)
    if plan.epochs < epochs <= MAX_EPOCHS:
        fixes.append(Fix("epochs", str(epochs), f"for {epochs * plan.steps_per_epoch} steps"))
    passes = plan.epochs if options.epochs is not None else MAX_EPOCHS
    batch = plan.sequences * passes // plan.min_steps  # the largest batch that reaches the steps
    if 1 <= batch < plan.batch_size:
        fixes.append(Fix("batch_size", str(batch), "for more, smaller steps"))
    fixes.append(Fix("samples", "4", "to sample more runs of each case to learn from"))
    fixes.append(Fix("force", None, "to train on this plan anyway"))
    raise BadInputError(
        f"this training would take {'at most ' if at_most else ''}{plan.schedule()}, and a model learns "
        f"little in under {plan.min_steps}",
        fixes=fixes,
    )
