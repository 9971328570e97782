"""What every RL sampler records and every RL trainer reads, whichever backend samples: each model turn's
prompt ids, sampled ids and their log q (``TurnRecord``), kept by run id until the update takes them
(``Records``, bounded), each turn's sampling seed (``rl_seed``, the same on every backend), and a run's
turns merged into the sequences the loss trains on (``sequences_of``:
``RLSequence``, the model's own tokens masked in, the prompt and tool results out). Pure Python."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_RUNS = 4096
"""Runs whose turns are kept untaken: a step's batch (cases × group) is at most a few hundred."""
MAX_TOKENS = 4_000_000
"""Token ids kept untaken (every turn's prompt and reply): about 150 MB of Python ints at worst, some 40
steps of 32 runs of 3 turns on 1,000-token prompts."""


@dataclass
class RLSequence:
    """One sampled sequence: its token ids, which tokens the model wrote (the ones trained), the sampling
    policy's log-probability of each token as recorded when it was sampled, and the advantage (the reward
    minus its group's mean; None where the run had nothing scored)."""

    input_ids: list[int]
    mask: list[bool]
    sampler_logprobs: list[float]
    advantage: float | None

    def __post_init__(self) -> None:
        size = len(self.input_ids)
        if len(self.mask) != size or len(self.sampler_logprobs) != size:
            raise ValueError(
                f"a sampled sequence of {size} tokens needs a mask and a log-probability per token "
                f"(got {len(self.mask)} and {len(self.sampler_logprobs)})"
            )
        if size and self.mask[0]:
            raise ValueError("the first token of a sequence has no context to be sampled from: mask it out")

    @property
    def target_tokens(self) -> int:
        return sum(self.mask)

    @property
    def trained(self) -> bool:
        """Whether it carries a gradient: an advantage other than 0 and a token of the model's own."""
        return bool(self.advantage) and self.target_tokens > 0


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

    def clear(self) -> None:
        """Forget every run's turns (a step's runs no update named)."""
        with self._lock:
            self._runs.clear()
            self.tokens = 0

    def take(self, run_id: str) -> list[TurnRecord] | None:
        """The run's turns, forgotten here; None for a run never recorded, taken already, or dropped."""
        with self._lock:
            turns = self._runs.pop(run_id, None)
            if turns is not None:
                self.tokens -= sum(t.size for t in turns)
            return turns


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


def rl_seed(seed: int, step: int, run: int | None, turn: int) -> int | None:
    """A turn's sampling seed from the training's seed, its step, the run's seed (``run_seed(case,
    index)``) and the turn; None (unseeded) for a run with no seed."""
    if run is None:
        return None
    digest = hashlib.sha256(f"rl:{seed}:{step}:{run}:{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def batch_of(records: Records, advantages: Mapping[str, float | None]) -> tuple[list[RLSequence], int]:
    """A step's batch: each named run's turns taken from ``records`` as sequences carrying its advantage,
    and how many named runs had none recorded (a run that failed before its model answered); every other
    run's turns are released."""
    batch: list[RLSequence] = []
    missing = 0
    for run_id, advantage in advantages.items():
        turns = records.take(run_id)
        if turns is None:
            missing += 1
            continue
        batch.extend(sequences_of(turns, advantage))
    records.clear()
    return batch, missing
