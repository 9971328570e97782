"""The plan of an RL training, priced before anything runs: the runs it samples, the judge calls that
grade them (checks cost nothing; each judge criterion is a call, each panel or Jev request one for all its
criteria), the tokens it trains on, and what that costs at the pricing table. A judged reward is paid on
every sample, so for a machine with judges the judging often costs more than the training itself."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from machine.budget import TRAINING, Usage, price_of
from machine.grade import DEFAULT_JUDGE_MODEL
from machine.runs import Record, counted

from .._excerpts import CHARS_PER_TOKEN
from .._plan import Plan
from ._options import RLOptions

if TYPE_CHECKING:
    from machine.grade import Evaluator
    from machine.spec import Case, Machine

JUDGE_PROMPT_TOKENS = 250
"""A judge call's own instructions, around the criteria and the run's transcript (``machine.grade``'s)."""
JUDGE_REPLY_TOKENS = 2_000
"""What a judge's reply is taken to use, its reasoning at the default medium effort included: an estimate
that errs high, as the pricing table's full prices do."""


class JudgeCall(Record):
    """One judging request each run makes: the criteria it grades and the model it asks."""

    kind: str
    """``judge`` (one criterion), ``panel`` (several in one call) or ``jev`` (a Jev request)."""
    criteria: list[str]
    model: str | None
    """The judge model (None: a Jev request, which the budget charges nothing)."""


class RLPlan(Plan):
    """An RL training's plan: ``runs`` are the samples; the counts and the price are its own."""

    samples: int
    checks: list[str] = Field(default_factory=list)
    """The criteria graded by checks: free, and run on every sample."""
    judging: list[JudgeCall] = Field(default_factory=list)
    """The judge calls each sample makes."""
    judge_calls: int = 0
    """Over the whole training: samples x calls a sample (each asked once; a reply with no usable
    score is asked again, not counted here)."""
    prompt_tokens: int = 0
    """A sample's prompt, estimated from the instructions and the cases' mean input."""
    reply_tokens: int = 0
    """A sample's own tokens at most: max_tokens a model turn, max_steps turns for a machine with tools."""
    training_tokens: int = 0
    """Tokens sent to the trainer: every sample's sequence, once each optimizer pass over its batch."""
    price_usd: float | None = None
    """Sampling, judging and training at the pricing table's rates (None: a price is not listed)."""
    prices: dict[str, float | None] = Field(default_factory=dict)
    """The price of each part (``sampling``, ``judging``, ``training``, and with a KL penalty
    ``reference``, the base's log-probabilities of every sample; None: not listed)."""

    def describe(self, *, warnings: bool = True) -> str:
        """The learners' sentence, then the counts and the price of the reward and the training."""
        said = super().describe(warnings=False) + f"; {self.priced()}"
        if warnings:
            said += "".join(f". Warning: {w}" for w in self.warnings)
        return said

    def priced(self) -> str:
        """``640 judge calls, about 276,480 training tokens, about $1.23 (sampling $0.10, ...)``."""
        parts = ", ".join(
            f"{part} {'unpriced' if usd is None else f'${usd:.2f}'}" for part, usd in self.prices.items()
        )
        price = "price unknown" if self.price_usd is None else f"about ${self.price_usd:.2f}"
        return (
            f"{counted(self.judge_calls, 'judge call')}, about {self.training_tokens:,} training tokens, "
            f"{price} ({parts})"
        )


def judge_calls(evaluator: Evaluator, judge_model: str | None = None) -> list[JudgeCall]:
    """The judging requests grading one run makes, as the evaluator makes them: a call per judge
    criterion, one per batch (a panel, a Jev model) for all of its criteria; ``judge_model`` overrides
    the graders' own models, as ``--judge-model`` does."""
    calls: list[JudgeCall] = []
    batches: dict[object, JudgeCall] = {}
    for name in evaluator.rubric:
        grader = evaluator.graders[name]
        if grader.kind == "check":
            continue
        batch = getattr(grader, "batch", None)
        if batch is not None and batch in batches:
            batches[batch].criteria.append(name)
            continue
        jev = grader.kind == "jev"
        own = getattr(batch if batch is not None else grader, "model", None)
        kind = "jev" if jev else "judge" if batch is None else "panel"
        call = JudgeCall(
            kind=kind, criteria=[name], model=None if jev else judge_model or own or DEFAULT_JUDGE_MODEL
        )
        calls.append(call)
        if batch is not None:
            batches[batch] = call
    return calls


def plan_rl(
    machine: Machine,
    cases: Sequence[Case],
    options: RLOptions | None = None,
    *,
    base_model: str | None = None,
    judge_model: str | None = None,
    kl: float | None = None,
) -> RLPlan:
    """What RL on ``machine`` samples from ``cases`` with ``options``, counted and priced: ``base_model``
    (default: the machine's model) is what it samples and trains, a checkpoint priced as its base;
    ``kl``, the weight of a penalty to the base (the training's)."""
    o = options or RLOptions()
    base = base_model or machine.model
    calls = judge_calls(machine.evaluator, judge_model)
    turns = machine.max_steps if machine.tools else 1
    prompt = _prompt_tokens(machine.instructions, cases)
    reply = turns * o.max_tokens
    sampled = Usage(input_tokens=sum(prompt + t * o.max_tokens for t in range(turns)), output_tokens=reply)
    training = o.samples * (prompt + reply) * o.passes
    prices = {
        "sampling": _cost(base, sampled, o.samples),
        "judging": _judging(calls, machine.evaluator, prompt + reply, o.samples),
        "training": _cost(TRAINING + base, Usage(input_tokens=training), 1),
    }
    if kl:  # the base's log-probabilities of every sequence, a prefill each, for the penalty
        prices["reference"] = _cost(base, Usage(input_tokens=prompt + reply), o.samples)
    known = [usd for usd in prices.values() if usd is not None]
    return RLPlan(
        operation="train",
        machine=machine.name,
        runs=o.samples,
        runs_are=f"a group of {o.group} of each of {counted(o.cases_per_step, 'case')} a step, graded",
        steps=o.rl_steps,
        steps_are=_steps_are(o, kl or 0.0),
        model=base,
        samples=o.samples,
        checks=[name for name in machine.rubric if machine.evaluator.graders[name].kind == "check"],
        judging=calls,
        judge_calls=o.samples * len(calls),
        prompt_tokens=prompt,
        reply_tokens=reply,
        training_tokens=training,
        price_usd=sum(known) if len(known) == len(prices) else None,
        prices=prices,
        warnings=_warnings(machine, cases, base, calls, prices),
    )


def _prompt_tokens(instructions: str, cases: Sequence[Case]) -> int:
    """A prompt's tokens: the instructions and the cases' mean input, at ``CHARS_PER_TOKEN``."""
    mean = sum(len(case.input) for case in cases) / len(cases) if cases else 0.0
    return math.ceil((len(instructions) + mean) / CHARS_PER_TOKEN)


def _cost(model: str, usage: Usage, times: int) -> float | None:
    """``times`` calls of ``usage`` on ``model`` at its listed price (None: not listed)."""
    price = price_of(model)
    return None if price is None else times * price.cost(usage)


def _judging(calls: list[JudgeCall], evaluator: Evaluator, run_tokens: int, samples: int) -> float | None:
    """Every judge call of every sample at its model's price; a Jev request costs nothing (the budget has
    no TypeSafe rate), and nor does a machine with checks alone. None when a judge's price is unknown."""
    total: float | None = 0.0
    for call in calls:
        if call.model is None:
            continue
        listed = "".join(evaluator.rubric[name].description for name in call.criteria)
        asked = JUDGE_PROMPT_TOKENS + run_tokens + math.ceil(len(listed) / CHARS_PER_TOKEN)
        cost = _cost(call.model, Usage(input_tokens=asked, output_tokens=JUDGE_REPLY_TOKENS), samples)
        total = None if cost is None or total is None else total + cost
    return total


def _steps_are(o: RLOptions, kl: float) -> str:
    """``RL steps of 32 samples (importance_sampling, one optimizer step each)``."""
    passes = (
        "one optimizer step each" if o.passes == 1 else f"{o.passes} optimizer steps each, clip {o.clip:g}"
    )
    penalty = f", KL {kl:g} to the base" if kl else ""
    return f"RL steps of {o.cases_per_step * o.group} samples ({o.loss}, {passes}{penalty})"


def _warnings(
    machine: Machine,
    cases: Sequence[Case],
    base: str,
    calls: list[JudgeCall],
    prices: dict[str, float | None],
) -> list[str]:
    """What makes the counts or the price less than sure: no cases, tool results left out, a price not
    listed."""
    said: list[str] = []
    if not cases:
        said.append(f"machine {machine.name!r} has no cases to sample: write cases.json")
    if machine.tools:
        said.append("tool results are not counted in the tokens: they are capped as the harness caps them")
    if prices["sampling"] is None:
        said.append(f"model {base!r} has no listed price, so its sampling is not priced")
    if prices["training"] is None:
        said.append(f"training {base!r} has no listed price, so the training is not priced")
    unpriced = sorted({c.model for c in calls if c.model is not None and price_of(c.model) is None})
    if unpriced:
        said.append(f"judge model {', '.join(unpriced)} has no listed price, so judging is not priced")
    return said
