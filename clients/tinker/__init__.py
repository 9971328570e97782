"""The Tinker trainer: LoRA fine-tuning on Tinker's service through its SDK (``tinker``).

Each optimizer step reserves its tokens at the base model's training price before anything is sent,
submits ``forward_backward`` and ``optim_step`` back to back (the service pipelines them), then waits for
both. The SDK blocks, so every call runs in a worker thread under a timeout: the event loop never stalls
and a hang is cut off. A capacity pause, a rate limit, a 5xx, a dropped connection or a timeout is tried
again with a growing pause, a bounded number of times, then stops training with a ``TrainingError`` that
names the step; a failed step reports nothing and charges nothing. After the last step the state is saved
(to resume from) and the weights are saved for sampling: that ``tinker://…/sampler_weights/…`` path is
the checkpoint a harness samples. Preference pairs (``method="dpo"``) train from the live checkpoint's
state when the settings name one (its weights, a fresh optimizer), on DPO's loss as a custom loss against
that model's log-probabilities (else the base's), measured once before the first step (``_tinker_dpo``).
Reinforcement learning (``method="rl"``) is a session the loop drives step by step (``_rl_session``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.to_thread

from machine.budget import TRAINING, Budget
from machine.errors import BadInputError, TrainingError
from machine.runs import Usage
from machine.training import (
    Checkpoint,
    Prepared,
    RLSettings,
    StepMetrics,
    TrainExample,
    TrainSettings,
    epoch_batches,
    learning_rate_at,
)

from ._calls import Flight, attempt_note, retry_reason
from ._dpo import (
    DPO_LEARNING_RATE,
    PairDatums,
    dpo_loss,
    drift_of,
    full_sequence,
    pair_datums,
    scored,
    start_state,
    weight_sum,
)
from ._render import Rendering, learning_rate_for, render, rendering_for, template_check
from ._rl_session import RL_LEARNING_RATE, TinkerRLSession
from ._saves import STATE_SCHEME, save_sampler, save_state

LOSS = "cross_entropy"
DEFAULT_RANK = 32
"""The LoRA rank unless the settings give one."""


def _service() -> Any:
    import tinker

    return tinker.ServiceClient()


@dataclass
class Batch:
    """One optimizer step's sequences."""

    number: int
    """1-based, over every epoch."""
    epoch: int
    data: list[Any]
    """Datums, or PairDatums for DPO."""

    @property
    def pairs(self) -> list[PairDatums]:
        return [d for d in self.data if isinstance(d, PairDatums)]

    @property
    def datums(self) -> list[Any]:
        """The Datums sent: a pair's chosen then its rejected."""
        return [one for d in self.data for one in (d.datums if isinstance(d, PairDatums) else (d,))]

    @property
    def tokens(self) -> int:
        return sum(int(d.model_input.length) for d in self.datums)

    @property
    def target_tokens(self) -> float:
        return sum(weight_sum(d) for d in self.datums)


def batches(data: Sequence[Any], settings: TrainSettings) -> list[Batch]:
    """Every optimizer step of the training, in order: each epoch walks the sequences in batches, in an
    order drawn from the seed, in batches whose sizes differ by one at most (``epoch_batches``: the local
    trainer's too, and the same on a resume)."""
    steps: list[Batch] = []
    for epoch in range(1, settings.epochs + 1):
        for part in epoch_batches(len(data), settings.batch_size, settings.seed, epoch):
            steps.append(Batch(len(steps) + 1, epoch, [data[i] for i in part]))
    return steps


def loss_of(output: Any, batch: Batch) -> float | None:
    """The step's mean loss per target token: from the per-token log-probabilities the service returns
    where it returns them, else its summed loss metric over the batch's target tokens. A DPO step's is
    the loss's own mean over its pairs."""
    metrics: dict[str, float] = getattr(output, "metrics", None) or {}
    if batch.pairs:
        return float(metrics["dpo_loss"]) if "dpo_loss" in metrics else None
    outputs = getattr(output, "loss_fn_outputs", None) or []
    if len(outputs) == len(batch.data) and all("logprobs" in o for o in outputs):
        total = sum(
            -lp * w
            for o, d in zip(outputs, batch.data, strict=True)
            for lp, w in zip(o["logprobs"].data, d.loss_fn_inputs["weights"].data, strict=False)
        )
        weight = batch.target_tokens
        return float(total / weight) if weight else None
    if "loss:sum" in metrics and batch.target_tokens:
        return float(metrics["loss:sum"]) / batch.target_tokens
    found = [v for k, v in metrics.items() if k.startswith("loss")]
    return float(found[0]) if found else None


@dataclass
class TinkerTrainer:
    """Trains on Tinker. ``service`` makes the SDK's ServiceClient (it reads ``TINKER_API_KEY``);
    ``rendering`` overrides the renderer tinker-cookbook recommends for the base model."""

    service: Callable[[], Any] = _service
    rendering: Rendering | None = None
    timeout_s: float = 900.0
    """How long one call (a step, a save, the start) may take before it counts as a failed try."""
    retries: int = 4
    """Tries after the first, for failures worth trying again."""
    backoff_s: float = 2.0
    """The pause before the first retry; it doubles each time."""
    save_every: int = 0
    """Also save the state every this many steps (0: only at the end), so a stopped training resumes."""
    name: str = field(default="tinker", init=False)
    takes: ClassVar[tuple[str, ...]] = ("dpo", "rl", "rl:kl")
    """The settings beyond the common ones this trainer honours (DPO on preference pairs, RL, and with RL
    alone a KL penalty to the base, ``_rl_kl``)."""

    def prepare(self, examples: Sequence[TrainExample], settings: TrainSettings) -> Prepared:
        """Render every example (whole or per step, checked on its tokens) into Tinker Datums; a
        preference pair into the Datums of its two answers."""
        from tinker_cookbook.supervised.common import datum_from_model_input_weights

        start_state(settings)  # a live checkpoint DPO cannot start from is refused now
        rendering = self.rendering or rendering_for(settings.base_model, settings.effort)
        dpo = settings.method == "dpo" and settings.learning_rate is None
        lr = DPO_LEARNING_RATE if dpo else learning_rate_for(settings.base_model, settings.learning_rate)
        checked = template_check(rendering, examples)

        def datum(s: Any) -> Any:
            return datum_from_model_input_weights(s.model_input, s.weights, max_length=settings.max_length)

        data: list[Any] = []
        whole = per_step = dropped = 0
        for example in examples if settings.method == "dpo" else ():
            pair = pair_datums(example, rendering, datum)
            data.extend([pair] if pair else [])
            whole, dropped = (whole + 1, dropped) if pair else (whole, dropped + 1)
        for example in examples if settings.method == "sft" else ():
            rendered = render(example, rendering)
            datums = [datum(s) for s in rendered.sequences]
            kept = [d for d in datums if weight_sum(d) > 0]  # cut to max_length with nothing left to learn
            dropped += len(datums) - len(kept)
            datums = kept
            if not datums:
                continue
            data.extend(datums)
            whole, per_step = (whole + 1, per_step) if rendered.whole_run else (whole, per_step + 1)
        return Prepared(
            trainer=self.name,
            renderer=rendering.name,
            effort=rendering.effort,
            examples=whole + per_step,
            sequences=len(data),
            whole_run=whole,
            per_step=per_step,
            dropped=dropped,
            tokens=Batch(0, 0, data).tokens,
            target_tokens=int(Batch(0, 0, data).target_tokens),
            learning_rate=lr,
            learning_rate_is="tinker-cookbook's DPO rate for LoRA" if dpo else _rate_is(settings.base_model),
            template=checked[0],
            template_differs=checked[1],
            data=data,
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
        """Train every step not done yet (``resume.step`` are), then save the state and the sampler
        weights; each state saved is handed to ``on_saved``."""
        told = on_saved or (lambda _checkpoint: None)
        steps = batches(list(prepared.data or []), settings)
        if not steps:
            raise BadInputError("nothing to train: the examples rendered to no sequence with a target")
        done = self._done(resume, len(steps))
        budget.check()  # a spent budget, or an unknown price under one, is refused before the start
        budget.probe_price(TRAINING + settings.base_model)
        client = await self._open(settings, resume)
        pairs = [d for d in prepared.data or [] if isinstance(d, PairDatums)]
        if pairs:
            await self._measure_base(pairs, settings, budget, resume)
        saved = resume
        for batch in steps[done:]:
            on_step(await self._step(client, batch, len(steps), prepared, settings, budget, saved))
            if self.save_every and batch.number % self.save_every == 0 and batch.number < len(steps):
                saved = await save_state(self, client, folder, settings.base_model, batch.number, saved)
                told(saved)
        last = len(steps)
        state = saved if saved is not None and saved.step == last else None
        if state is None:
            state = await save_state(self, client, folder, settings.base_model, last, saved)
            told(state)
        return await save_sampler(self, client, folder, settings.base_model, last, state)

    async def rl(
        self,
        settings: TrainSettings,
        rl: RLSettings,
        *,
        folder: Path,
        budget: Budget,
        resume: Checkpoint | None = None,
    ) -> TinkerRLSession:
        """An RL session (``_rl_session``) on a training client opened as ``train`` opens one, at the
        settings' learning rate else ``RL_LEARNING_RATE``; a spent budget, or a price of training or
        sampling the base unknown under a cap, is refused before anything starts."""
        done = self._done(resume, rl.steps)
        budget.check()
        budget.probe_price(TRAINING + settings.base_model)
        budget.probe_price(settings.base_model)
        rendering = self.rendering or rendering_for(settings.base_model, settings.effort)
        client = await self._open(settings, resume)
        rate = settings.learning_rate or RL_LEARNING_RATE
        return TinkerRLSession(
            self, client, settings, rl, rendering, folder, budget, rate, done, resume, self.save_every
        )

    def _done(self, resume: Checkpoint | None, total: int) -> int:
        if resume is None:
            return 0
        if resume.state is None:
            raise BadInputError(f"checkpoint {resume.model!r} saved no training state to resume from")
        if not resume.state.startswith(STATE_SCHEME):  # a record naming a file here is never sent on
            raise BadInputError(
                f"the training record names the state {resume.state!r} to resume from, which is not a "
                f"state saved on Tinker ({STATE_SCHEME}…); start a new training instead"
            )
        if resume.step > total:
            raise BadInputError(f"cannot resume at step {resume.step}: this training has {total} steps")
        return resume.step

    async def _open(self, settings: TrainSettings, resume: Checkpoint | None) -> Any:
        """A training client: a new LoRA on the base model, one loaded from a saved state to resume, or
        (DPO, RL) one with the live checkpoint's weights and a fresh optimizer."""
        start = start_state(settings)

        def create() -> list[Any]:
            service = self.service()
            if resume is not None and resume.state is not None:  # the weights and Adam's moments both
                return [service.create_training_client_from_state_with_optimizer(resume.state)]
            if start is not None:
                return [service.create_training_client_from_state(start)]
            base, rank, seed = settings.base_model, settings.rank or DEFAULT_RANK, settings.seed
            return [service.create_lora_training_client(base, rank=rank, seed=seed)]

        (client,) = await self._call("starting training on Tinker", create, step=0, saved=resume)
        return client

    async def _step(
        self,
        client: Any,
        batch: Batch,
        steps: int,
        prepared: Prepared,
        settings: TrainSettings,
        budget: Budget,
        saved: Checkpoint | None,
    ) -> StepMetrics:
        from tinker import types

        tokens = batch.tokens
        rate = learning_rate_at(prepared.learning_rate, batch.number, steps, settings.lr_schedule)
        params = types.AdamParams(learning_rate=rate)
        started = time.monotonic()
        if batch.pairs:  # a custom loss costs a forward pass before the forward and backward
            loss = dpo_loss(batch.pairs, settings.beta, settings.rpo_alpha or 0.0)
            usage = Usage(input_tokens=2 * tokens)

            def submit() -> list[Any]:
                return [client.forward_backward_custom(batch.datums, loss), client.optim_step(params)]
        else:
            usage = Usage(input_tokens=tokens)

            def submit() -> list[Any]:
                return [client.forward_backward(batch.data, LOSS), client.optim_step(params)]

        async with budget.reserve(TRAINING + settings.base_model, usage, kind="training") as hold:
            output, _ = await self._call(
                f"training step {batch.number}", submit, step=batch.number, saved=saved
            )
            cost = hold.settle(usage)
        return StepMetrics(
            step=batch.number,
            epoch=batch.epoch,
            loss=loss_of(output, batch),
            sequences=len(batch.data),
            tokens=tokens,
            learning_rate=rate,
            seconds=time.monotonic() - started,
            cost_usd=cost,
            chosen_drift=drift_of(output) if batch.pairs else None,
        )

    async def _measure_base(
        self, pairs: list[PairDatums], settings: TrainSettings, budget: Budget, saved: Checkpoint | None
    ) -> None:
        """The reference's log-probability of both answers of every pair, read once through a sampler
        of it (the live checkpoint DPO starts from, else the base; the same on a resume), and charged at
        the training price."""
        sequences = [full_sequence(d) for pair in pairs for d in pair.datums]
        usage = Usage(input_tokens=Batch(0, 0, list(pairs)).tokens)  # as the plan prices it
        live = settings.start.model if start_state(settings) is not None and settings.start else None
        where: dict[str, str] = {"model_path": live} if live else {"base_model": settings.base_model}

        def submit() -> list[Any]:
            sampler = self.service().create_sampling_client(**where).result()
            return [sampler.compute_logprobs(s) for s in sequences]

        model = "the live model" if live else "the base model"
        async with budget.reserve(TRAINING + settings.base_model, usage, kind="training") as hold:
            replies = await self._call(
                f"measuring {model} on the preference pairs", submit, step=0, saved=saved
            )
            hold.settle(usage)
        for i, pair in enumerate(pairs):
            pair.reference = (scored(pair.chosen, replies[2 * i]), scored(pair.rejected, replies[2 * i + 1]))

    async def _call(
        self, what: str, submit: Callable[[], list[Any]], *, step: int, saved: Checkpoint | None
    ) -> list[Any]:
        """Submit the calls (back to back) and wait for every reply, in a worker thread under the
        timeout. A failure the service reports is tried again after a growing pause; a call with no
        reply yet is never sent again (a step would be trained twice, a start would open a second
        training run): the next try waits on the same request."""
        tries = self.retries + 1
        reasons: list[str] = []
        flight = Flight(submit)
        for attempt in range(tries):
            try:
                with anyio.fail_after(self.timeout_s):
                    return await anyio.to_thread.run_sync(flight.wait, self.timeout_s, abandon_on_cancel=True)
            except Exception as error:
                reason = retry_reason(error, self.timeout_s)
                if reason is None:
                    raise TrainingError(f"{what} failed: {error}", step=step, checkpoint=saved) from error
                reasons.append(reason)
            if attempt + 1 < tries:
                await anyio.sleep(self.backoff_s * 2**attempt)
        unanswered = (
            "; it was sent once and may still land, so resume from the last saved state (its weights "
            "and optimizer state come from before it)"
            if flight.futures is not None
            else ""
        )
        raise TrainingError(
            f"{what} failed {attempt_note(reasons)}; Tinker may be busy or down, try again later"
            + unanswered,
            step=step,
            checkpoint=saved,
        )


def _rate_is(base_model: str) -> str:
    """Where the default learning rate for ``base_model`` comes from, in words."""
    if "inkling" in base_model.lower():
        return "the default for LoRA on Inkling"
    return f"tinker-cookbook's LoRA rate for {base_model} (hyperparam_utils.get_lr)"
