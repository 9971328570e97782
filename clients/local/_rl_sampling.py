"""Sampling for reinforcement learning on a local model (issue 53): the local harness in RL mode makes
ordinary runs (stored, graded by the machine's evaluator like any other) and keeps, per run id, the exact
tokens of each model turn, which become the ``RLSequence``s the loss trains on.

Design: ``LocalHarness(rl=RLSampling(...))``. A run in this mode samples at the request's temperature
(else ``RLSampling.temperature``, 1.0) from the WHOLE distribution, no top-k (the loss differentiates the
distribution that was sampled), and records for every model turn its prompt's token ids, the sampled ids
(the stop token included) and each one's log q = log_softmax(logits / T)[token]: never text tokenised
again. The RL loop runs its group through the workspace with this harness, then ``records.take(run.id)``
hands it that run's turns (and forgets them) for ``sequences_of``. ``policy`` makes the harness sample
the model that trains (``Session.policy()``), not the model the run names, so each step samples the very
weights it then updates.

Records are bounded: kept only until taken, at most ``max_runs`` runs and ``max_tokens`` tokens; past
either the oldest run's are dropped (counted in ``dropped``), and a dropped run records nothing more.

Seeds: every turn's sampling seed is drawn from (the training's seed, the step, the run's seed, the turn);
a run's seed is ``run_seed(case, trial)``, the trial its index in the group. So a resumed training
(``Session.save_state``/``restore``) draws the same samples as one never stopped, batched or not (a row's
draws depend on its seed only). Pure Python: torch is not needed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._rl_turns import Records
from ._models import LocalModel


@dataclass
class RLSampling:
    """The local harness's RL mode: the training's ``seed`` and ``step`` (they seed each turn), the
    temperature when the request gives none, the model sampled (``policy``; None: the request's), and
    where the turns are kept."""

    seed: int
    step: int
    temperature: float = 1.0
    policy: LocalModel | None = None
    records: Records = field(default_factory=Records)

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError("RL samples at a temperature above 0, where log q is defined")
