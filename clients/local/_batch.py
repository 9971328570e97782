"""Generation for local models, batched: runs in flight together wait a few milliseconds for each other and
are generated in one left-padded ``model.generate`` call, each row with its own seed, temperature and
token limit, so a suite's concurrent runs share the model rather than queue for it.

A worker thread per model does the generating, so the event loop stays free; a run that is cancelled
while it waits marks its row, and a stopping criterion checked after every token ends that row.

A job that ``records`` (RL's sampling) is drawn from the whole distribution at its temperature, no top-k,
and gets each generated token's log q = log_softmax(logits / T)[token]: the distribution the RL loss
differentiates. The row's log-softmax is kept one step and read at the token that step actually appended
(the next call's last input id, or the output's last column), so log q is that of the token generated.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from machine.errors import HarnessError

TOP_K = 50
"""Sampling draws from the most likely tokens only (the transformers default), so a small model's long
tail of unlikely tokens does not derail a reply."""


NEUTRAL: dict[str, Any] = {
    "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "min_new_tokens": 0,  # overrides a model's min_length too (transformers sets it from this)
    "suppress_tokens": [],
    "begin_suppress_tokens": [],
}
"""A model's own generation settings that reshape the logits before the sampler sees them (transformers
fills what a config leaves unset from the model's: Qwen2.5 ships a repetition penalty), set off in a batch
with a recording row, so its log q is of the logits the RL loss computes."""


@dataclass
class Job:
    """One generation step of one run: its prompt and how to sample it; ``tokens`` is what came back."""

    prompt: list[int]
    max_new_tokens: int
    temperature: float
    seed: int | None
    notify: Callable[[], None] = lambda: None
    cancelled: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    tokens: list[int] = field(default_factory=list)
    stopped: bool = False
    """Whether the reply ended at a stop token (rather than at its token limit)."""
    error: BaseException | None = None
    records: bool = False
    """Sample without top-k and record each token's log q in ``logprobs`` (RL)."""
    logprobs: list[float] = field(default_factory=list)

    def finish(self) -> None:
        self.finished.set()
        self.notify()


class _RowStop:
    """Ends each row at its own token limit, or as soon as its run is cancelled."""

    def __init__(self, jobs: list[Job], start: int) -> None:
        self.jobs, self.start = jobs, start

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        made = input_ids.shape[1] - self.start
        done = [job.cancelled.is_set() or made >= job.max_new_tokens for job in self.jobs]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class _RowSampler:
    """Samples every row with its own generator and temperature (greedy at 0), then leaves only the chosen
    token possible, so the greedy search that ``generate`` runs picks it: a row's tokens depend on its
    seed, not on which other runs share its batch."""

    def __init__(self, jobs: list[Job], device: Any) -> None:
        import torch

        self.jobs = jobs
        self.generators = []
        for job in jobs:
            generator = torch.Generator(device=device)
            generator.manual_seed(job.seed if job.seed is not None else int.from_bytes(os.urandom(4), "big"))
            self.generators.append(generator)
        self.pending: list[Any] = [None] * len(jobs)
        """Each recording row's log-softmax at the step just sampled, read once its token is known."""

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        self.settle(input_ids)
        chosen = torch.full_like(scores, float("-inf"))
        for row, job in enumerate(self.jobs):
            logits = scores[row].float()
            if job.temperature <= 0:
                token = logits.argmax()
            elif job.records:
                logq = torch.log_softmax(logits / job.temperature, dim=-1)  # the whole vocabulary
                token = torch.multinomial(logq.exp(), 1, generator=self.generators[row])[0]
                self.pending[row] = logq
            else:
                top = torch.topk(logits, min(TOP_K, logits.shape[-1]))
                probs = torch.softmax(top.values / job.temperature, dim=-1)
                token = top.indices[torch.multinomial(probs, 1, generator=self.generators[row])[0]]
            chosen[row, token] = 0.0
        return chosen

    def settle(self, input_ids: Any) -> None:
        """Record, for each recording row, log q of the token its last step appended (``input_ids``'
        last column): the token generated, whatever ran after this sampler."""
        last = input_ids[:, -1].tolist()
        for row, logq in enumerate(self.pending):
            if logq is not None:
                self.jobs[row].logprobs.append(float(logq[last[row]]))
                self.pending[row] = None


class Batcher:
    """Gathers the steps waiting within ``window_s`` (at most ``max_batch``) and generates them together."""

    def __init__(self, loaded: Any, *, window_s: float = 0.005, max_batch: int = 8) -> None:
        self.loaded = loaded
        self.window_s, self.max_batch = window_s, max_batch
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.batches = 0
        """``generate`` calls made (one per batch), for tests and benchmarks."""
        self.rows = 0
        self._start = threading.Lock()

    def submit(self, job: Job) -> None:
        with self._start:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._work, name="machine-local-generate", daemon=True)
                self.thread.start()
        self.queue.put(job)

    async def generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        temperature: float,
        seed: int | None,
        *,
        records: bool = False,
    ) -> Job:
        """One step's tokens (with their log q when ``records``); cancelling the caller ends its row
        after the next token."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def notify() -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody waits for this row
                loop.call_soon_threadsafe(woken.set)

        job = Job(prompt, max_new_tokens, temperature, seed, notify, records=records)
        self.submit(job)
        try:
            while not job.finished.is_set():
                await woken.wait()
        finally:
            if not job.finished.is_set():
                job.cancelled.set()
        if job.error is not None:
            raise job.error
        return job

    def close(self) -> None:
        """Stop the worker after the batch it is generating."""
        self.queue.put(None)

    def _gather(self, first: Job) -> list[Job]:
        batch = [first]
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            try:
                job = self.queue.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                break
            if job is None:
                self.queue.put(None)
                break
            batch.append(job)
        return batch

    def _work(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = self._gather(first)
            live = [job for job in batch if not job.cancelled.is_set()]
            try:
                if live:
                    self._generate(live)
            except Exception as error:
                failure = HarnessError(f"local generation failed: {type(error).__name__}: {error}")
                for job in live:
                    job.error = failure
            for job in batch:
                job.finish()

    def _generate(self, jobs: list[Job]) -> None:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        loaded = self.loaded
        width = max(len(job.prompt) for job in jobs)
        ids = [[loaded.pad_id] * (width - len(job.prompt)) + job.prompt for job in jobs]
        mask = [[0] * (width - len(job.prompt)) + [1] * len(job.prompt) for job in jobs]
        config = GenerationConfig(  # type: ignore[no-untyped-call]
            do_sample=False,
            max_new_tokens=max(job.max_new_tokens for job in jobs),
            pad_token_id=loaded.pad_id,
            eos_token_id=loaded.stop_ids,
            **(NEUTRAL if any(job.records for job in jobs) else {}),
        )
        sampled = any(job.temperature > 0 for job in jobs)
        sampler = _RowSampler(jobs, loaded.device) if sampled else None
        processors = LogitsProcessorList([sampler] if sampler is not None else [])
        with torch.inference_mode():
            out = loaded.model.generate(
                input_ids=torch.tensor(ids, device=loaded.device),
                attention_mask=torch.tensor(mask, device=loaded.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([_RowStop(jobs, width)]),
            )
        if sampler is not None:
            sampler.settle(out)
        self.batches += 1
        self.rows += len(jobs)
        stops = set(loaded.stop_ids)
        for row, job in enumerate(jobs):
            tokens = out[row, width:].tolist()[: job.max_new_tokens]
            end = next((i for i, token in enumerate(tokens) if token in stops), None)
            job.stopped = end is not None
            job.tokens = tokens if end is None else tokens[: end + 1]
            job.logprobs = job.logprobs[: len(job.tokens)]
