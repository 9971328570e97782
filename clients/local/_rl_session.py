"""RL on a local model as the trainer offers it (``machine.training.RLSession``): a peft session on the
base (or the live adapter) with no dropout, a local harness in RL mode sampling that very policy, and one
update a step from the advantages the loop gives by run id, each run's recorded turns merged into the
sequences the loss trains (``_rl_sampling.sequences_of``). Sampling and updating alternate, never overlap:
the update runs in a worker thread while no run samples. Local training costs nothing."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from machine.training import Checkpoint, RLSettings, RLUpdate, TrainSettings

from .._rl_turns import Records, batch_of
from . import LocalHarness
from ._dpo import start_adapter
from ._models import load, portable
from ._rl import RLLoss
from ._rl_sampling import RLSampling
from ._stepping import off_loop, resume_state
from ._train_session import ADAPTER_DIR, STATES_DIR, Lora, Session

RL_LEARNING_RATE = 5e-4
"""AdamW's learning rate for RL on LoRA, unless the settings give one. Measured with
``benchmarks/rl_local.py`` (SmolLM2-135M, rank 16, 24 steps of 32 samples): the mean reward rose from 0.16
to 0.98 and the held-out mean by 0.30. Above SFT's 2e-4, since an RL step's loss is a sum over sampled
tokens weighted by advantages centred at 0, and a few dozen steps are what a CPU affords."""


class LocalRLSession:
    """One RL training of a local model (see the module); ``max_batch`` runs are generated together."""

    def __init__(
        self,
        session: Session,
        settings: TrainSettings,
        rl: RLSettings,
        *,
        folder: Path,
        shape: Shape,
        max_batch: int = 8,
    ) -> None:
        self.session, self.settings, self.rl = session, settings, rl
        self.learning_rate, self.save_every = session.learning_rate, shape.save_every
        self.folder, self.root = folder, shape.root
        self.max_batch_tokens, self.max_batch = shape.max_batch_tokens, max_batch
        self.records = Records()
        self.loss = RLLoss(kind=rl.loss, clip=rl.clip, kl=settings.kl or 0.0, temperature=rl.temperature)

    @property
    def done(self) -> int:
        return self.session.done

    def sampler(self, step: int) -> LocalHarness:
        """The local harness sampling the policy for ``step``, into this session's records."""
        mode = RLSampling(
            seed=self.settings.seed,
            step=step,
            temperature=self.rl.temperature,
            policy=self.session.policy(),
            records=self.records,
        )
        return LocalHarness(max_new_tokens=self.rl.max_tokens, max_batch=self.max_batch, rl=mode)

    async def update(self, step: int, advantages: Mapping[str, float | None], rate: float) -> RLUpdate:
        """One step over the named runs' sequences; the step's other records are released."""
        started = time.monotonic()
        batch, missing = batch_of(self.records, advantages)
        passes, size = self.rl.passes, self.max_batch_tokens
        metrics = await anyio.to_thread.run_sync(
            lambda: self.session.rl_step(batch, self.loss, size, rate, passes)
        )
        trained = metrics.sequences > 0
        return RLUpdate(
            loss=metrics.loss if trained else None,
            sequences=metrics.sequences,
            skipped=metrics.skipped,
            missing=missing,
            tokens=metrics.tokens,
            ratio=metrics.ratio,
            clipped=metrics.clipped,
            kl=metrics.kl,
            entropy=metrics.entropy,
            grad_norm=metrics.grad_norm if trained else None,
            seconds=time.monotonic() - started,
        )

    async def save(self) -> Checkpoint:
        """The state under ``states/step-N``, named relative to the workspace when inside it."""
        done = self.session.done
        where = self.folder / STATES_DIR / f"step-{done}"
        path = await anyio.to_thread.run_sync(self.session.save_state, where, self.settings.base_model)
        return self._checkpoint(path, done, state=True)

    async def finish(self) -> Checkpoint:
        """The adapter, saved as the checkpoint ``local:BASE+ADAPTER`` a harness samples."""
        where = self.folder / ADAPTER_DIR
        path = await anyio.to_thread.run_sync(self.session.save_adapter, where, self.settings.base_model)
        return self._checkpoint(path, self.session.done, state=False)

    def _checkpoint(self, path: Path, step: int, *, state: bool) -> Checkpoint:
        named = portable(path, self.root)
        base = self.settings.base_model
        return Checkpoint(model=f"{base}+{named}", base_model=base, step=step, state=named if state else None)

    async def close(self) -> None:
        self.session.close()


@dataclass(frozen=True)
class Shape:
    """What the trainer decides of an RL session: the adapter's shape, the workspace root (paths are
    named relative to it), the padded tokens of one forward pass, and the steps between saved states."""

    lora: Lora
    root: Path | None
    max_batch_tokens: int
    save_every: int


async def open_rl_session(
    settings: TrainSettings,
    rl: RLSettings,
    shape: Shape,
    *,
    folder: Path,
    resume: Checkpoint | None,
) -> LocalRLSession:
    """A session on the base (a new adapter of ``shape``, or the live adapter RL starts from), restored
    from ``resume``'s saved state when given; loaded in a worker thread."""
    state = resume_state(resume, rl.steps, shape.root, folder)
    rate = settings.learning_rate or RL_LEARNING_RATE

    def opened() -> LocalRLSession:
        loaded = load(settings.base_model, shape.root)
        start = start_adapter(settings, shape.root)
        session = Session(
            loaded, shape.lora, rate, settings.seed, kl=settings.kl or 0.0, start=start, rl=True
        )
        if state is not None:
            session.restore(state)
        return LocalRLSession(session, settings, rl, folder=folder, shape=shape)

    made: LocalRLSession = await off_loop(opened, "starting", 0, resume)
    return made
