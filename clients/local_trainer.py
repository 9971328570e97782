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
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.to_thread

from machine.errors import BadInputError, MachineError, TrainingError
from machine.runs import (
    Budget,
    Checkpoint,
    Prepared,
    StepMetrics,
    TrainExample,
    TrainSettings,
    confined,
    learning_rate_at,
)

from ._local_light import light
from ._local_models import LocalModel, load, portable
from ._local_train_data import (
    PairSequence,
    Renderer,
    end_of_turn,
    render,
    renderer_name,
    truncated,
)
from ._local_train_session import Batch, Lora, Session, plan

DEFAULT_LEARNING_RATE = 2e-4
"""AdamW's learning rate for LoRA on a small model, unless the settings give one."""
SECONDS_PER_TOKEN = 0.007
"""Wall time a token trained takes, measured on 2 busy CPU cores with SmolLM2-135M; a plan's estimate
scales it by the model's size (a rough figure: a GPU, or a quiet machine, is faster)."""
SECONDS_MEASURED_AT = 134_515_008
"""The parameters of the model ``SECONDS_PER_TOKEN`` was measured on."""
DEFAULT_RANK = 16
"""The LoRA rank, unless the settings or the trainer give one."""
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
"""The attention projections (their names in Llama, Qwen, Mistral and SmolLM models)."""
ADAPTER_DIR = "adapter"
STATES_DIR = "states"
RECORDED_IN = "checkpoints.jsonl"
"""The training record's file a state to resume from is read from (``train`` reads it there)."""


@dataclass
class LocalTrainer:
    """Trains a LoRA adapter on a local model. ``rank`` (else the settings' rank, else 16), ``alpha`` (else
    twice the rank), ``target_modules`` and ``dropout`` shape the adapter."""

    rank: int | None = None
    alpha: int | None = None
    target_modules: tuple[str, ...] = TARGET_MODULES
    dropout: float = 0.05
    save_every: int = 0
    """Also save the state every this many steps (0: only at the end), so a stopped training resumes."""
    max_batch_tokens: int = 8192
    """Padded tokens one forward pass may hold; a step's batch is split (gradients accumulated) beyond it."""
    root: Path | None = None
    """The workspace root: the checkpoint's paths inside it are recorded relative to it, and relative
    paths (a base, a state to resume from) are read from it. None: the current folder, paths absolute."""
    name: str = field(default="local", init=False)
    takes: ClassVar[tuple[str, ...]] = ("lora_alpha", "lora_dropout", "target_modules", "kl", "dpo")
    """The settings beyond the common ones this trainer honours (the adapter's shape, a KL penalty, DPO)."""

    def lora(self, settings: TrainSettings) -> Lora:
        """The adapter's shape: each part from the settings, else this trainer's, else the default."""
        rank = settings.rank or self.rank or DEFAULT_RANK
        alpha = settings.lora_alpha or self.alpha or 2 * rank
        dropout = self.dropout if settings.lora_dropout is None else settings.lora_dropout
        modules = tuple(settings.target_modules or self.target_modules)
        return Lora(rank, alpha, modules, dropout)

    def prepare(self, examples: Sequence[TrainExample], settings: TrainSettings) -> Prepared:
        """Render every example (whole or per step, checked on its tokens) to ids and labels."""
        tokenizer, stop_ids, size = self._described(settings)
        renderer = Renderer(tokenizer, end_of_turn(tokenizer, stop_ids))
        data: list[Any] = []
        whole = per_step = dropped = 0
        if settings.method == "dpo":
            data, dropped = _pairs(renderer, examples, settings.max_length)
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
            learning_rate=settings.learning_rate or DEFAULT_LEARNING_RATE,
            learning_rate_is="the local trainer's default for LoRA (measured on signoff)",
            seconds_per_token=SECONDS_PER_TOKEN * size / SECONDS_MEASURED_AT,
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
        state = _resume_state(resume, len(steps), self.root, folder)
        session = await _off_loop(
            lambda: self._open(settings, prepared.learning_rate, state), "starting", 0, resume
        )
        told = on_saved or (lambda _checkpoint: None)
        saved = resume
        try:
            for batch in steps[session.done :]:
                rate = learning_rate_at(
                    prepared.learning_rate, batch.number, len(steps), settings.lr_schedule
                )
                beta = settings.beta if settings.method == "dpo" else None
                work = functools.partial(self._step, session, batch, data, rate, beta)
                on_step(await _off_loop(work, "step", batch.number, saved))
                if self.save_every and batch.number % self.save_every == 0 and batch.number < len(steps):
                    saved = await self._save(session, folder, settings, saved)
                    told(saved)
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            if session.done > (saved.step if saved else 0):  # the steps done since the last save are kept
                with anyio.CancelScope(shield=True):
                    told(await self._save(session, folder, settings, saved))
            raise
        last = len(steps)
        if saved is None or saved.step != last:
            saved = await self._save(session, folder, settings, saved)
            told(saved)
        adapter = await _off_loop(
            lambda: session.save_adapter(folder / ADAPTER_DIR, settings.base_model), "saving", last, saved
        )
        return Checkpoint(
            model=f"{settings.base_model}+{portable(adapter, self.root)}",
            base_model=settings.base_model,
            step=last,
            state=saved.state,
        )

    def _open(self, settings: TrainSettings, learning_rate: float, state: Path | None) -> Session:
        loaded: LocalModel = load(settings.base_model, self.root)
        session = Session(loaded, self.lora(settings), learning_rate, settings.seed, kl=settings.kl or 0.0)
        if state is not None:
            session.restore(state)
        return session

    def _step(
        self, session: Session, batch: Batch, data: list[Any], rate: float, beta: float | None
    ) -> StepMetrics:
        """One step: on the targets' cross-entropy, or (``beta`` given) on DPO's loss over pairs."""
        started = time.monotonic()
        sequences = [data[i] for i in batch.indices]
        if beta is None:
            loss = session.step(sequences, self.max_batch_tokens, rate)
        else:
            loss = session.dpo_step(sequences, beta, rate)
        return StepMetrics(
            step=batch.number,
            epoch=batch.epoch,
            loss=loss,
            sequences=len(sequences),
            tokens=sum(len(s.input_ids) for s in sequences),
            learning_rate=rate,
            seconds=time.monotonic() - started,
            cost_usd=0.0,
        )

    async def _save(
        self, session: Session, folder: Path, settings: TrainSettings, saved: Checkpoint | None
    ) -> Checkpoint:
        step = session.done
        where = folder / STATES_DIR / f"step-{step}"
        path = await _off_loop(lambda: session.save_state(where, settings.base_model), "saving", step, saved)
        named = portable(path, self.root)
        model = f"{settings.base_model}+{named}"
        return Checkpoint(model=model, base_model=settings.base_model, step=step, state=named)


def _pairs(
    renderer: Renderer, examples: Sequence[TrainExample], max_length: int | None
) -> tuple[list[PairSequence], int]:
    """Each preference pair as its chosen and its rejected sequence after the same prompt (the pairs a
    cut leaves without a target in either are dropped); and how many were dropped."""
    pairs: list[PairSequence] = []
    for example in examples:
        sides = [
            render(renderer, messages, example.tools, example.targets, run_id=example.run_id).sequences
            for messages in example.sides()
        ]
        cut = [truncated(side[0], max_length) if side else None for side in sides]
        if cut[0] is not None and cut[1] is not None:
            pairs.append(PairSequence(cut[0], cut[1]))
    return pairs, len(examples) - len(pairs)


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


def _resume_state(resume: Checkpoint | None, total: int, root: Path | None, folder: Path) -> Path | None:
    """The saved state to resume from, which must lie in the workspace (the training's folder when the
    workspace is not known): a record naming a state elsewhere is refused, not loaded."""
    if resume is None:
        return None
    if resume.state is None:
        raise BadInputError(f"checkpoint {resume.model!r} saved no training state to resume from")
    if resume.step > total:
        raise BadInputError(f"cannot resume at step {resume.step}: this training has {total} steps")
    named_in = folder / RECORDED_IN
    return confined(resume.state, root or folder, named_in=named_in, what="the training state")


async def _off_loop(work: Callable[[], Any], what: str, step: int, saved: Checkpoint | None) -> Any:
    """``work`` in a worker thread (a cancel waits for it, then stops the training there); a failure that is
    not the person's to fix becomes a TrainingError carrying the last saved state."""
    try:
        return await anyio.to_thread.run_sync(work)
    except MachineError:
        raise
    except Exception as error:
        label = {"starting": "starting the local training", "step": f"training step {step}"}.get(
            what, f"saving the training state after step {step}"
        )
        raise TrainingError(
            f"{label} failed: {type(error).__name__}: {error}", step=step, checkpoint=saved
        ) from error


__all__ = ["DEFAULT_LEARNING_RATE", "DEFAULT_RANK", "TARGET_MODULES", "LocalTrainer"]
