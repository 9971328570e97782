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

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._models import LocalModel
from ._rl import RLSequence

MAX_RUNS = 4096
"""Runs whose turns are kept untaken: a step's batch (cases × group) is at most a few hundred."""
MAX_TOKENS = 4_000_000
"""Token ids kept untaken (every turn's prompt and reply): about 150 MB of Python ints at worst, some 40
steps of 32 runs of 3 turns on 1,000-token prompts."""


@dataclass(frozen=True)
class TurnRecord:
    """One model turn as it was sampled: the prompt's ids, the ids generated (ending with the stop token
    when it stopped), and the log q of each generated id at the sampling temperature."""

    prompt: list[int]
    tokens: list[int]
    logprobs: list[float]
    stopped: bool

    @property
    def size(self) -> int:
        return len(self.prompt) + len(self.tokens)


class Records:
    """The turns of runs sampled in RL mode, by run id, until taken; bounded by runs and by tokens."""

    def __init__(self, max_runs: int = MAX_RUNS, max_tokens: int = MAX_TOKENS) -> None:
        self.max_runs, self.max_tokens = max_runs, max_tokens
        self._runs: OrderedDict[str, list[TurnRecord]] = OrderedDict()
        self._dropped: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.tokens = 0
        self.dropped = 0
        """Runs whose turns were dropped untaken, to make room."""

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, run_id: str, turn: TurnRecord) -> None:
        """Keep ``turn`` of ``run_id`` (nothing, for a run already dropped: its turns would be partial)."""
        with self._lock:
            if run_id in self._dropped:
                return
            self._runs.setdefault(run_id, []).append(turn)
            self.tokens += turn.size
            while len(self._runs) > self.max_runs or (self.tokens > self.max_tokens and len(self._runs) > 1):
                old, turns = self._runs.popitem(last=False)
                self.tokens -= sum(t.size for t in turns)
                self.dropped += 1
                self._dropped[old] = None
                while len(self._dropped) > self.max_runs:
                    self._dropped.popitem(last=False)

    def take(self, run_id: str) -> list[TurnRecord] | None:
        """The run's turns, forgotten here; None for a run never recorded, taken already, or dropped."""
        with self._lock:
            turns = self._runs.pop(run_id, None)
            if turns is not None:
                self.tokens -= sum(t.size for t in turns)
            return turns


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


def rl_seed(seed: int, step: int, run: int | None, turn: int) -> int | None:
    """A turn's sampling seed from the training's seed, its step, the run's seed (``run_seed(case,
    index)``) and the turn; None (unseeded) for a run with no seed."""
    if run is None:
        return None
    digest = hashlib.sha256(f"rl:{seed}:{step}:{run}:{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def sequences_of(turns: Sequence[TurnRecord], advantage: float | None) -> list[RLSequence]:
    """A run's turns as sequences to train: turns merge into one while each prompt extends the one
    before it with its reply (the prefix check the SFT renderer makes, on the sampled ids themselves),
    else a new sequence starts there, as the cookbook's ``trajectory_to_data`` does. The prompt and tool
    results are context (masked out), the sampled ids are trained with their log q; a turn that
    generated nothing adds nothing."""
    sequences: list[RLSequence] = []
    ids: list[int] = []
    mask: list[bool] = []
    logq: list[float] = []
    for turn in (t for t in turns if t.tokens):
        if ids and turn.prompt[: len(ids)] != ids:
            sequences.append(RLSequence(ids, mask, logq, advantage))
            ids, mask, logq = [], [], []
        context = turn.prompt[len(ids) :]
        ids = [*ids, *context, *turn.tokens]
        mask = [*mask, *([False] * len(context)), *([True] * len(turn.tokens))]
        logq = [*logq, *([0.0] * len(context)), *turn.logprobs]
    if ids:
        sequences.append(RLSequence(ids, mask, logq, advantage))
    return sequences
