"""The local trainer: LoRA fine-tuning (peft) of a local model (``local:...``) in this process, on the CPU
or a GPU when there is one, on the Trainer protocol, so ``machine train`` selects, records and gates the
same way as on Tinker.

Examples are rendered exactly as the local harness prompts the model (``_local_train_data``), loss on the
target replies only. Each optimizer step (``batch_size`` sequences, accumulated over micro-batches of at most
``max_batch_tokens`` padded tokens) runs in a worker thread, so the event loop goes on and a cancel takes
effect between steps. Local training costs nothing: no budget is reserved or charged. The state (adapter,
optimizer, step, random state) is saved every ``save_every`` steps and at the end; the adapter, saved with
peft's ``save_pretrained``, is the checkpoint: ``local:BASE+ADAPTER``, which the local harness samples. Given
the workspace ``root``, the checkpoint names its adapter and state relative to it, so a workspace moved or
cloned elsewhere keeps sampling, committing and resuming it; a state to resume from is read only from
inside the workspace, whatever path a training record names.

Preference pairs (``method="dpo"``) train from the live checkpoint's adapter when the settings name one
(``start``: a ``local:BASE+ADAPTER``), its shape kept, without dropout; the reference is that model as it
is before the first step, each pair's log-probabilities measured once then.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.to_thread

from machine.budget import Budget
from machine.errors import BadInputError
from machine.training import (
    Checkpoint,
    Prepared,
    RLSettings,
    StepMetrics,
    TrainExample,
    TrainSettings,
    learning_rate_at,
)

from ._dpo import DPO_LEARNING_RATE, live_shape, render_pairs, start_adapter
from ._light import light
from ._models import LocalModel, load, portable
from ._rl_session import LocalRLSession, Shape, open_rl_session
from ._stepping import off_loop, resume_state, waited
from ._train_data import (
    PairSequence,
    Renderer,
    end_of_turn,
    render,
    renderer_name,
    truncated,
)
from ._train_session import ADAPTER_DIR, STATES_DIR, Batch, Lora, Session, plan

DEFAULT_LEARNING_RATE = 2e-4
"""AdamW's learning rate for LoRA on a small model, unless the settings give one."""
SECONDS_PER_TOKEN = 0.007
"""Wall time a token trained takes, measured on 2 busy CPU cores with SmolLM2-135M; a plan's estimate
scales it by the model's size (a rough figure: a GPU, or a quiet machine, is faster)."""
SECONDS_MEASURED_AT = 134_515_008
"""The parameters of the model ``SECONDS_PER_TOKEN`` and the run figures were measured on."""
RUN_SECONDS = 0.3
"""Wall time of one run a training makes besides its reply's tokens (the prompt read, the model's load
shared by every run), on the local harness at its default threads and the default concurrency."""
RUN_SECONDS_PER_REPLY_TOKEN = 0.1
"""Wall time of one run per token of the replies the examples teach, measured on signoff (SmolLM2-135M,
2 cores, batches of 4): the live model's own replies ran about 3x the teacher's, and a batch is generated
until its longest reply ends, so the figure is the held-out runs of both sides over the teacher's tokens."""
DEFAULT_RANK = 16
"""The LoRA rank, unless the settings or the trainer give one."""
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
"""The attention projections (their names in Llama, Qwen, Mistral and SmolLM models)."""


@dataclass
class LocalTrainer:
    """Trains a LoRA adapter on a local model. ``rank`` (else the settings' rank, else 16), ``alpha`` (else
    twice the rank), ``target_modules`` and ``dropout`` shape the adapter."""

    rank: int | None = None
    alpha: int | None = None
    target_modules: tuple[str, ...] = TARGET_MODULES
    dropout: float = 0.05
    """The LoRA dropout for SFT (DPO's is none unless the settings give one, as TRL disables it)."""
    save_every: int = 0
    """Also save the state every this many steps (0: only at the end), so a stopped training resumes."""
    max_batch_tokens: int = 8192
    """Padded tokens one forward pass may hold; a step's batch is split (gradients accumulated) beyond it."""
    root: Path | None = None
    """The workspace root: the checkpoint's paths inside it are recorded relative to it, and relative
    paths (a base, a state to resume from) are read from it. None: the current folder, paths absolute."""
    name: str = field(default="local", init=False)
    takes: ClassVar[tuple[str, ...]] = ("lora_alpha", "lora_dropout", "target_modules", "kl", "dpo", "rl")
    """The settings beyond the common ones this trainer honours (the adapter's shape, a KL penalty, DPO,
    RL)."""

    def lora(self, settings: TrainSettings) -> Lora:
        """The adapter's shape: each part from the settings, else this trainer's, else the default; the
        live adapter's own when DPO starts from one (``_local_dpo``)."""
        default = 0.0 if settings.method == "dpo" else self.dropout
        dropout = default if settings.lora_dropout is None else settings.lora_dropout
        adapter = start_adapter(settings, self.root)
        if adapter is not None:
            return live_shape(adapter, settings, dropout)
        rank = settings.rank or self.rank or DEFAULT_RANK
        alpha = settings.lora_alpha or self.alpha or 2 * rank
        modules = tuple(settings.target_modules or self.target_modules)
        return Lora(rank, alpha, modules, dropout)

    def prepare(self, examples: Sequence[TrainExample], settings: TrainSettings) -> Prepared:
        """Render every example (whole or per step, checked on its tokens) to ids and labels."""
        tokenizer, stop_ids, size = self._described(settings)
        renderer = Renderer(tokenizer, end_of_turn(tokenizer, stop_ids))
        data: list[Any] = []
        whole = per_step = dropped = 0
        if settings.method == "dpo":
            data, dropped = render_pairs(renderer, examples, settings.max_length)
            whole = len(data)
        for example in examples if settings.method == "sft" else ():
            rendered = render(
                renderer, example.messages, example.tools, example.targets, run_id=example.run_id
            )
            kept = [t for t in (truncated(s, settings.max_length) for s in rendered.sequences) if t]
            dropped += len(rendered.sequences) - len(kept)
            if not kept:
                continue
            data.extend(kept)
            whole, per_step = (whole + 1, per_step) if rendered.whole_run else (whole, per_step + 1)
        return Prepared(
            trainer=self.name,
            renderer=renderer_name(tokenizer),
            examples=whole + per_step,
            sequences=len(data),
            whole_run=whole,
            per_step=per_step,
            dropped=dropped,
            tokens=sum(len(s.input_ids) for s in data),
            target_tokens=sum(s.target_tokens for s in data),
            learning_rate=settings.learning_rate or _default_rate(settings),
            learning_rate_is=_rate_is(settings),
            seconds_per_token=SECONDS_PER_TOKEN * size / SECONDS_MEASURED_AT,
            run_seconds=_run_seconds(data, whole + per_step, size),
            data=data,
        )

    def _described(self, settings: TrainSettings) -> tuple[Any, list[int], int]:
        """The base's tokenizer, stop ids and parameter count: read from its files where they say it and
        name every target module (``_local_light``), else from the model loaded."""
        wanted = self.lora(settings).target_modules
        shape = light(settings.base_model, self.root)
        if shape is not None and all(_named(shape.modules, m) for m in wanted):
            return shape.tokenizer, shape.stop_ids, shape.parameters
        loaded = load(settings.base_model, self.root)
        _check_modules(loaded, wanted)
        return loaded.tokenizer, loaded.stop_ids, sum(p.numel() for p in loaded.model.parameters())

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
        """Train every step not done yet (``resume.step`` are), saving the state as it goes (and, when
        stopped from outside, once more before it stops), then save the adapter as the checkpoint. Free:
        ``budget`` is neither reserved on nor charged."""
        data: list[Any] = list(prepared.data or [])
        steps = plan(len(data), settings.batch_size, settings.epochs, settings.seed)
        if not steps:
            raise BadInputError("nothing to train: the examples rendered to no sequence with a target")
        state = resume_state(resume, len(steps), self.root, folder)
        session = await off_loop(
            lambda: self._open(settings, prepared.learning_rate, state, data), "starting", 0, resume
        )
        told = on_saved or (lambda _checkpoint: None)
        saved, lock = resume, threading.Lock()
        beta, lr = settings.beta if settings.method == "dpo" else None, prepared.learning_rate
        untold: list[StepMetrics] = []

        def step(batch: Batch, rate: float) -> StepMetrics:
            with lock:  # one step or save at a time: a stop waits out the step in flight
                untold.append(self._step(session, batch, data, rate, beta))
                return untold[-1]

        try:
            for batch in steps[session.done :]:
                rate = learning_rate_at(lr, batch.number, len(steps), settings.lr_schedule)
                metrics = await off_loop(functools.partial(step, batch, rate), "step", batch.number, saved)
                untold.clear()  # told once, even where telling it stops the training
                on_step(metrics)
                if self.save_every and batch.number % self.save_every == 0 and batch.number < len(steps):
                    saved = await self._save(session, lock, folder, settings, saved)
                    told(saved)
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            with anyio.CancelScope(shield=True):
                await self._stopped(session, lock, untold, on_step, told, folder, settings, saved)
            raise
        last = len(steps)
        if saved is None or saved.step != last:
            saved = await self._save(session, lock, folder, settings, saved)
            told(saved)
        adapter = await off_loop(
            lambda: session.save_adapter(folder / ADAPTER_DIR, settings.base_model), "saving", last, saved
        )
        return Checkpoint(
            model=f"{settings.base_model}+{portable(adapter, self.root)}",
            base_model=settings.base_model,
            step=last,
            state=saved.state,
        )

    async def rl(
        self,
        settings: TrainSettings,
        rl: RLSettings,
        *,
        folder: Path,
        budget: Budget,
        resume: Checkpoint | None = None,
    ) -> LocalRLSession:
        """An RL session on the base (or the live adapter), restored from ``resume``'s saved state; free,
        so ``budget`` is neither reserved on nor charged."""
        shape = Shape(self.lora(settings), self.root, self.max_batch_tokens, self.save_every)
        return await open_rl_session(settings, rl, shape, folder=folder, resume=resume)

    def _open(
        self, settings: TrainSettings, learning_rate: float, state: Path | None, data: list[Any]
    ) -> Session:
        """The session on the base (with the live adapter DPO starts from); the pairs' reference measured
        on it before a saved state is restored, so a resumed training compares against its start."""
        loaded: LocalModel = load(settings.base_model, self.root)
        session = Session(
            loaded,
            self.lora(settings),
            learning_rate,
            settings.seed,
            kl=settings.kl or 0.0,
            start=start_adapter(settings, self.root),
            rpo_alpha=settings.rpo_alpha or 0.0,
        )
        pairs = [d for d in data if isinstance(d, PairSequence)]
        if pairs:
            session.measure(pairs)
        if state is not None:
            session.restore(state)
        return session

    def _step(
        self, session: Session, batch: Batch, data: list[Any], rate: float, beta: float | None
    ) -> StepMetrics:
        """One step: on the targets' cross-entropy, or (``beta`` given) on DPO's loss over pairs."""
        started = time.monotonic()
        sequences = [data[i] for i in batch.indices]
        drift = None
        if beta is None:
            loss = session.step(sequences, self.max_batch_tokens, rate)
        else:
            loss, drift = session.dpo_step(sequences, beta, rate)
        return StepMetrics(
            step=batch.number,
            epoch=batch.epoch,
            loss=loss,
            sequences=len(sequences),
            tokens=sum(len(s.input_ids) for s in sequences),
            learning_rate=rate,
            seconds=time.monotonic() - started,
            cost_usd=0.0,
            chosen_drift=drift,
        )

    async def _stopped(
        self,
        session: Session,
        lock: threading.Lock,
        untold: list[StepMetrics],
        on_step: Callable[[StepMetrics], None],
        told: Callable[[Checkpoint], None],
        folder: Path,
        settings: TrainSettings,
        saved: Checkpoint | None,
    ) -> None:
        """On the way out: a cancelled await leaves its thread going, so the step in flight ends first,
        then it is told and the steps done since the last save are saved."""
        await anyio.to_thread.run_sync(waited, lock)
        for metrics in untold:
            on_step(metrics)
        if session.done > (saved.step if saved else 0):
            told(await self._save(session, lock, folder, settings, saved))

    async def _save(
        self,
        session: Session,
        lock: threading.Lock,
        folder: Path,
        settings: TrainSettings,
        saved: Checkpoint | None,
    ) -> Checkpoint:
        """The state saved, once no step is in flight (``lock``), under the number of steps it holds."""

        def save() -> tuple[int, Path]:
            with lock:
                where = folder / STATES_DIR / f"step-{session.done}"
                return session.done, session.save_state(where, settings.base_model)

        step, path = await off_loop(save, "saving", session.done, saved)
        named = portable(path, self.root)
        model = f"{settings.base_model}+{named}"
        return Checkpoint(model=model, base_model=settings.base_model, step=step, state=named)


def _default_rate(settings: TrainSettings) -> float:
    return DPO_LEARNING_RATE if settings.method == "dpo" else DEFAULT_LEARNING_RATE


def _rate_is(settings: TrainSettings) -> str:
    if settings.method == "dpo":
        return (
            "the local trainer's default for DPO on LoRA, a tenth of SFT's (TRL's and the cookbook's range)"
        )
    return "the local trainer's default for LoRA (measured on signoff)"


def _run_seconds(data: list[Any], examples: int, size: int) -> float:
    """One run's rough wall time on this model: the teacher's mean reply (a pair's chosen answer) in
    tokens, at the figures measured on signoff, scaled by the model's size."""
    replies = sum((s.chosen if isinstance(s, PairSequence) else s).target_tokens for s in data)
    mean = replies / max(examples, 1)
    return (RUN_SECONDS + RUN_SECONDS_PER_REPLY_TOKEN * mean) * size / SECONDS_MEASURED_AT


def _named(names: Iterable[str], module: str) -> bool:
    return any(n == module or n.endswith(f".{module}") for n in names)


def _check_modules(loaded: LocalModel, wanted: Sequence[str]) -> None:
    """Every target module names a layer of the model, so a misspelt one is refused before training."""
    names = [name for name, _ in loaded.model.named_modules()]
    missing = [m for m in wanted if not _named(names, m)]
    if missing:
        leaves = sorted({n.rsplit(".", 1)[-1] for n, m in loaded.model.named_modules() if _is_linear(m)})
        raise BadInputError(
            f"target modules {', '.join(missing)} are not layers of {loaded.model_id}; its linear layers "
            f"are: {', '.join(leaves)}"
        )


def _is_linear(module: Any) -> bool:
    import torch

    return isinstance(module, torch.nn.Linear)


__all__ = ["DEFAULT_LEARNING_RATE", "DEFAULT_RANK", "TARGET_MODULES", "LocalTrainer"]
