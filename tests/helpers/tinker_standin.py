"""A stand-in for Tinker's service at its SDK boundary, since no machine here reaches it: a ServiceClient
and a TrainingClient with exactly the methods the Tinker trainer calls (their signatures are pinned to the
real SDK's), checking that they are given the SDK's own types and answering with them.

Each call takes its outcome from a script (per method, in order): a reply, an SDK error raised from the
future's ``result`` as the SDK raises it, HANG, a future that never answers (until the test ends: the
request never reached the service), or ``Late(seconds)``: the service does the work at once and its
answer comes that much later (a wait shorter than that times out, as the SDK's future does). An
``optim_step`` submitted after a failed or hung ``forward_backward`` fails with it (it has no gradients).

For preference training it also has samplers (``compute_logprobs``) of the base model and of saved
sampler weights, and ``forward_backward_custom``: the model's log-probability of each token is the
base's (``base_logprob``) plus one learned offset per sequence, the loss function is run on those as leaf
tensors as the SDK runs it, and ``optim_step`` moves each offset against its gradient's sign by the
learning rate, as Adam's first steps do. The offsets are the weights a saved state, and saved sampler
weights, keep.

As the real client does, a training client whose ``forward_backward_custom`` failed refuses every later
request (its ``optim_step`` submitted with it included) with the SDK's ``RuntimeError``: it is poisoned.

For reinforcement learning, ``forward_backward`` also takes the built-in ``importance_sampling`` and
``ppo`` losses and checks each Datum as the service does (the loss's input names and no others, each as
long as the model input, in its dtype), refusing a wrong one with a 400; the policy's log-probability of a
target is the base's plus the sequence's offset, the loss is the service's token sum, and its gradient by
each offset moves the weights at the next ``optim_step``. Samplers of the latest weights
(``save_weights_and_get_sampling_client``) and of saved ones ``sample`` seeded tokens, each with its
log-probability under those weights; ``replies`` scripts the tokens of the next samples (a tool call, say),
and a sampler of the base measures any sequence (``compute_logprobs``), as RL's KL penalty reads it."""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # imported where used: tinker imports torch, seconds that every test collection would pay
    import tinker
    from tinker import types

HANG = "hang"


def base_logprob(token: int) -> float:
    """The base model's log-probability of a token, in the stand-in: fixed, and different by token."""
    return -1.0 - (token % 5) / 10


LOSS_INPUTS: dict[str, dict[str, str]] = {
    "cross_entropy": {"target_tokens": "int64", "weights": "float32"},
    "importance_sampling": {"target_tokens": "int64", "logprobs": "float32", "advantages": "float32"},
    "ppo": {"target_tokens": "int64", "logprobs": "float32", "advantages": "float32"},
}
"""The ``loss_fn_inputs`` each built-in loss reads, and their dtypes (Tinker's loss documentation).

Checked against the installed SDK (tinker 0.38) and cookbook, which do not settle it either way, so it
stays: the SDK checks no input names before sending (``proto.request_conv`` writes whatever the Datum
holds), and the cookbook strips its ``mask`` from every RL Datum before ``forward_backward``
(``rl.train._remove_mask``; ``distillation/sdft.py`` says the custom-loss path takes only
``target_tokens`` and ``weights``), which is what refusing other names assumes. But the SDK's Datum
converts three more names as loss inputs (``types.datum._KEY_TO_TYPE``: ``clip_low_threshold``,
``clip_high_threshold``, ``sequence_ratio_mask``, float32), so some loss reads inputs beyond these; which
one, the SDK does not say, and nothing here sends them."""
PPO_CONFIG = {"clip_low_threshold", "clip_high_threshold"}
"""PPO's clip as ``loss_fn_config`` keys. Not settled by the installed SDK, so it stays: its
``ForwardBackwardInput.loss_fn_config`` is documented as "e.g., PPO clip thresholds" and is sent as it is
(every key, to both of the request's config maps), and the cookbook only passes a config through, naming
no key; these two names appear in the SDK only as per-token loss inputs (``_KEY_TO_TYPE``)."""
POISONED = "A previous request failed; this TrainingClient is poisoned and cannot accept further requests."
"""The real client's refusal of every request after a failed custom-loss call."""
SAMPLED_VOCAB = range(100, 200)
"""The token ids a stand-in sampler draws from (apart from the stop token it is given)."""

HANG_CAP_S = 20.0
"""The longest a hung future blocks its thread, should a test forget to release it."""

BASE_URL = "http://127.0.0.1:9/api/v1"


def status_error(status: int, body: dict[str, Any] | None = None) -> tinker.APIStatusError:
    """The SDK's own error for an HTTP status, as its client raises it."""
    import tinker

    request = httpx.Request("POST", f"{BASE_URL}/forward_backward")
    response = httpx.Response(status, json=body or {}, request=request)
    kind = {429: tinker.RateLimitError, 400: tinker.BadRequestError}.get(status)
    if kind is None:
        kind = tinker.InternalServerError if status >= 500 else tinker.APIStatusError
    return kind(f"Error code: {status}", response=response, body=body)


def capacity_pause() -> tinker.APIStatusError:
    """What the SDK raises when the service stays paused for capacity past its own retries."""
    return status_error(429, {"queue_state": "paused_capacity"})


@dataclass(frozen=True)
class Late:
    """The service does the work now and answers ``seconds`` later."""

    seconds: float


@dataclass
class Call:
    method: str
    args: dict[str, Any]


class StandInFuture:
    """An ``APIFuture``: ``result`` gives the reply, raises the scripted error, or hangs (ignoring its
    timeout, as a stuck connection would)."""

    def __init__(self, outcome: object, reply: Any, release: threading.Event) -> None:
        self.outcome, self.reply, self.release = outcome, reply, release
        self.answers_at = time.monotonic() + outcome.seconds if isinstance(outcome, Late) else 0.0

    def result(self, timeout: float | None = None) -> Any:
        if isinstance(self.outcome, Late):
            left = self.answers_at - time.monotonic()
            if timeout is not None and timeout < left:
                time.sleep(timeout)
                raise TimeoutError(f"no answer within {timeout} s")
            time.sleep(max(left, 0.0))
            return self.reply
        if self.outcome == HANG:
            self.release.wait(HANG_CAP_S)
            raise RuntimeError("a hung call was released when its test ended")
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.reply


@dataclass
class StandInService:
    """The ServiceClient factory and the service's state: every call in order, the optimizer steps
    applied to the weights, the optimizer's own state (the steps its Adam moments were built over), and
    the saved states (name -> steps applied when saved, and the optimizer's state then). As on the
    service, a training client made from a state gets its weights back, and its optimizer state only from
    ``create_training_client_from_state_with_optimizer``."""

    script: dict[str, list[object]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    applied: int = 0
    moments: int = 0
    saved: dict[str, int] = field(default_factory=dict)
    saved_moments: dict[str, int] = field(default_factory=dict)
    offsets: dict[tuple[int, ...], float] = field(default_factory=dict)
    """The weights a custom loss trains: an offset per sequence (its tokens) on every log-probability."""
    saved_offsets: dict[str, dict[tuple[int, ...], float]] = field(default_factory=dict)
    sampler_offsets: dict[str, dict[tuple[int, ...], float]] = field(default_factory=dict)
    """The offsets each ``save_weights_for_sampler`` kept, by its path: what a sampler of it reads."""
    gradients: dict[tuple[int, ...], float] = field(default_factory=dict)
    """The last forward_backward(_custom)'s gradient of the loss by each offset, for the next optim_step."""
    sent: list[list[types.Datum]] = field(default_factory=list)
    """The Datums of every forward_backward, in order, as the service received them."""
    replies: list[list[int]] = field(default_factory=list)
    """The tokens the next samples return, in order, before seeded draws resume (each stops when it ends
    with a stop token the request gives)."""
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> StandInServiceClient:
        self.calls.append(Call("ServiceClient", {}))
        return StandInServiceClient(self)

    def outcome(self, method: str, args: dict[str, Any]) -> object:
        with self.lock:
            self.calls.append(Call(method, args))
            queue = self.script.get(method, [])
            return queue.pop(0) if queue else None

    def future(self, method: str, args: dict[str, Any], reply: Any) -> StandInFuture:
        return StandInFuture(self.outcome(method, args), reply, self.release)

    def methods(self) -> list[str]:
        return [c.method for c in self.calls]

    def reply(self) -> list[int] | None:
        """The next scripted reply's tokens, or None when none is left."""
        with self.lock:
            return self.replies.pop(0) if self.replies else None

    def loss(self) -> float:
        """The loss the model has now: it halves with every optimizer step applied."""
        return 2.0 * 0.5**self.applied


class StandInServiceClient:
    """``tinker.ServiceClient``: the two ways to get a training client."""

    def __init__(self, service: StandInService) -> None:
        self.service = service

    def create_lora_training_client(
        self,
        base_model: str,
        rank: int = 32,
        seed: int | None = None,
        train_mlp: bool = True,
        train_attn: bool = True,
        train_unembed: bool = True,
        user_metadata: dict[str, str] | None = None,
        optimizer: Any = None,
    ) -> StandInFuture:
        assert isinstance(base_model, str) and isinstance(rank, int)
        args = {"base_model": base_model, "rank": rank, "seed": seed}
        return self.service.future("create_lora_training_client", args, StandInTrainingClient(self.service))

    def create_training_client_from_state(
        self,
        path: str,
        base_model: str | None = None,
        user_metadata: dict[str, str] | None = None,
        weights_access_token: str | None = None,
        optimizer: Any = None,
    ) -> StandInFuture:
        return self._from_state("create_training_client_from_state", path, with_optimizer=False)

    def create_training_client_from_state_with_optimizer(
        self,
        path: str,
        base_model: str | None = None,
        user_metadata: dict[str, str] | None = None,
        weights_access_token: str | None = None,
    ) -> StandInFuture:
        return self._from_state("create_training_client_from_state_with_optimizer", path, with_optimizer=True)

    def _from_state(self, method: str, path: str, *, with_optimizer: bool) -> StandInFuture:
        name = path.rsplit("/", 1)[-1]
        assert name in self.service.saved, f"no state saved at {path}"
        self.service.applied = self.service.saved[name]
        self.service.moments = self.service.saved_moments[name] if with_optimizer else 0
        self.service.offsets = dict(self.service.saved_offsets.get(name, {}))
        client = StandInTrainingClient(self.service)
        return self.service.future(method, {"path": path}, client)

    def create_sampling_client(
        self,
        model_path: str | None = None,
        base_model: str | None = None,
        retry_config: Any = None,
        record_stability_info: bool = False,
    ) -> StandInFuture:
        assert (model_path is None) != (base_model is None), "a sampler of a base or of saved weights"
        if model_path is not None:
            assert model_path in self.service.sampler_offsets, f"no sampler weights saved at {model_path}"
            args, offsets = {"model_path": model_path}, self.service.sampler_offsets[model_path]
        else:
            args, offsets = {"base_model": str(base_model)}, {}
        sampler = StandInSamplingClient(self.service, offsets)
        return self.service.future("create_sampling_client", args, sampler)


class StandInSamplingClient:
    """``tinker.SamplingClient``: a model's log-probabilities of a sequence's tokens (the base's, plus
    the sequence's offset in the saved weights sampled)."""

    def __init__(self, service: StandInService, offsets: dict[tuple[int, ...], float] | None = None) -> None:
        self.service = service
        self.offsets = offsets or {}

    def compute_logprobs(
        self, prompt: types.ModelInput, prompt_logprobs_last_n: int | None = None
    ) -> StandInFuture:
        from tinker import types

        assert isinstance(prompt, types.ModelInput)
        tokens = prompt.to_ints()
        offset = self.offsets.get(tuple(tokens), 0.0)
        reply: list[float | None] = [None, *(base_logprob(t) + offset for t in tokens[1:])]
        return self.service.future("compute_logprobs", {"tokens": len(tokens)}, reply)

    def sample(
        self,
        prompt: types.ModelInput,
        num_samples: int,
        sampling_params: types.SamplingParams,
        include_prompt_logprobs: bool = False,
        topk_prompt_logprobs: int = 0,
        topk_sample_logprobs: int = 0,
        target_prompt_logprobs: types.TensorData | None = None,
        prompt_alt_tokens_k: int = 0,
        prompt_logprobs_last_n: int | None = None,
    ) -> StandInFuture:
        """The service's scripted ``replies`` first, then seeded draws (the params' seed, else the
        prompt's): each a few ids from ``SAMPLED_VOCAB``, ended by the first stop token given when it stops
        before ``max_tokens``; each id's log-probability is the base's plus the offset these weights hold for
        the whole sequence (as training reads it)."""
        import numpy as np
        from tinker import types

        assert isinstance(prompt, types.ModelInput) and isinstance(sampling_params, types.SamplingParams)
        assert isinstance(num_samples, int) and num_samples >= 1
        ids = prompt.to_ints()
        limit = sampling_params.max_tokens or 16
        stop = sampling_params.stop
        stop_ids = (
            [int(t) for t in stop] if isinstance(stop, list) and stop and isinstance(stop[0], int) else []
        )
        sequences = []
        for index in range(num_samples):
            scripted = self.service.reply()
            if scripted is not None:
                tokens, stopped = scripted, bool(scripted) and scripted[-1] in stop_ids
            else:
                draw = random.Random(f"{sampling_params.seed}:{ids}:{index}")
                size = draw.randint(1, limit)
                tokens = [draw.choice(SAMPLED_VOCAB) for _ in range(size)]
                stopped = bool(stop_ids) and size < limit
                tokens = [*tokens, stop_ids[0]] if stopped else tokens
            offset = self.offsets.get((*ids, *tokens), 0.0)
            logprobs = [base_logprob(t) + offset for t in tokens]
            sequences.append(
                types.SampledSequence(
                    stop_reason="stop" if stopped else "length",
                    sequence_id=f"seq-{len(self.service.calls)}-{index}",
                    tokens_np=np.asarray(tokens, dtype=np.int32),
                    logprobs_np=np.asarray(logprobs, dtype=np.float32),
                )
            )
        args = {
            "tokens": len(ids),
            "num_samples": num_samples,
            "temperature": sampling_params.temperature,
            "top_k": sampling_params.top_k,
            "top_p": sampling_params.top_p,
            "max_tokens": sampling_params.max_tokens,
        }
        return self.service.future("sample", args, types.SampleResponse(sequences=sequences))


def _key(datum: types.Datum) -> tuple[int, ...]:
    targets = datum.loss_fn_inputs["target_tokens"].data
    return (*datum.model_input.to_ints(), int(targets[-1]))


class StandInTrainingClient:
    """``tinker.TrainingClient``: the calls one training makes."""

    def __init__(self, service: StandInService) -> None:
        self.service = service
        self.failed_backward: object = None
        self.poisoned: object = None
        """The failure of a custom-loss call, after which this client refuses every request."""

    def forward_backward(self, data: list[Any], loss_fn: str, loss_fn_config: Any = None) -> StandInFuture:
        from tinker import types

        assert isinstance(data, list) and data and all(isinstance(d, types.Datum) for d in data)
        args = {"sequences": len(data), "tokens": sum(d.model_input.length for d in data), "loss_fn": loss_fn}
        if loss_fn_config is not None:
            args["loss_fn_config"] = dict(loss_fn_config)
        if self.poisoned is not None:
            return self._refused("forward_backward", args)
        problem = datum_problem(data, loss_fn, loss_fn_config)
        if problem is not None:  # the service refuses a request it cannot read
            self.service.calls.append(Call("forward_backward", args))
            future = StandInFuture(status_error(400, {"detail": problem}), None, self.service.release)
            self.failed_backward = future.outcome
            return future
        self.service.sent.append(list(data))
        if loss_fn == "cross_entropy":
            reply = self._cross_entropy(data)
        else:
            reply = self._policy_gradient(data, loss_fn, loss_fn_config)
        future = self.service.future("forward_backward", args, reply)
        self.failed_backward = None if isinstance(future.outcome, Late) else future.outcome
        if self.failed_backward is not None:
            self.service.gradients.clear()
        return future

    def _cross_entropy(self, data: list[Any]) -> Any:
        from tinker import types

        loss = self.service.loss()
        outputs = [
            {"logprobs": types.TensorData(data=[-loss] * d.model_input.length, dtype="float32")} for d in data
        ]
        total = sum(loss * sum(d.loss_fn_inputs["weights"].data) for d in data)
        return types.ForwardBackwardOutput(
            loss_fn_output_type="ArrayRecord", loss_fn_outputs=outputs, metrics={"loss:sum": total}
        )

    def _policy_gradient(self, data: list[Any], loss_fn: str, config: Any) -> Any:
        """Tinker's ``importance_sampling`` (-sum r A) or ``ppo`` (-sum min(r A, clip(r) A)), r = p / q
        token-wise, with the policy's log p of each target the base's plus the sequence's offset; the
        gradient by each offset is kept for the next optim_step."""
        from tinker import types

        low, high = 0.8, 1.2
        if config:
            low, high = float(config["clip_low_threshold"]), float(config["clip_high_threshold"])
        total = 0.0
        outputs = []
        for datum in data:
            key = _key(datum)
            offset = self.service.offsets.get(key, 0.0)
            targets = datum.loss_fn_inputs["target_tokens"].data
            sampler = datum.loss_fn_inputs["logprobs"].data
            advantages = datum.loss_fn_inputs["advantages"].data
            policy = [base_logprob(int(t)) + offset for t in targets]
            gradient = 0.0
            for p, q, a in zip(policy, sampler, advantages, strict=True):
                ratio = math.exp(p - q)
                if loss_fn == "ppo" and min(max(ratio, low), high) * a < ratio * a:
                    total -= min(max(ratio, low), high) * a  # clipped: no gradient
                    continue
                total -= ratio * a
                gradient -= ratio * a
            self.service.gradients[key] = self.service.gradients.get(key, 0.0) + gradient
            outputs.append({"logprobs": types.TensorData(data=policy, dtype="float32")})
        return types.ForwardBackwardOutput(
            loss_fn_output_type="ArrayRecord", loss_fn_outputs=outputs, metrics={"loss:sum": total}
        )

    def _refused(self, method: str, args: dict[str, Any], reply: Any = None) -> StandInFuture:
        """A request on a poisoned client: recorded, and failing as the SDK fails it."""
        self.service.calls.append(Call(method, args))
        error = RuntimeError(POISONED)
        error.__cause__ = self.poisoned if isinstance(self.poisoned, BaseException) else None
        return StandInFuture(error, reply, self.service.release)

    def forward_backward_custom(
        self,
        data: list[types.Datum],
        loss_fn: Any,
        *,
        loss_type_input: Any = None,
    ) -> StandInFuture:
        import torch
        from tinker import types

        assert isinstance(data, list) and data and all(isinstance(d, types.Datum) for d in data)
        args = {"sequences": len(data), "tokens": sum(d.model_input.length for d in data)}
        if self.poisoned is not None:
            return self._refused("forward_backward_custom", args)
        future = self.service.future("forward_backward_custom", args, None)
        self.failed_backward = None if isinstance(future.outcome, Late) else future.outcome
        if isinstance(self.failed_backward, BaseException):
            self.poisoned = self.failed_backward
        if self.failed_backward is not None:
            return future
        rows = []
        for datum in data:
            offset = self.service.offsets.get(_key(datum), 0.0)
            row = [base_logprob(int(t)) + offset for t in datum.loss_fn_inputs["target_tokens"].data]
            rows.append(torch.tensor(row, requires_grad=True))
        loss, metrics = loss_fn(data, rows)
        loss.backward()
        for datum, row in zip(data, rows, strict=True):
            assert row.grad is not None
            self.service.gradients[_key(datum)] = float(row.grad.sum())
        outputs = [{"logprobs": types.TensorData(data=r.tolist(), dtype="float32")} for r in rows]
        future.reply = types.ForwardBackwardOutput(
            loss_fn_output_type="ArrayRecord",
            loss_fn_outputs=outputs,
            metrics={**metrics, "loss:sum": float(loss.detach().sum())},
        )
        return future

    def optim_step(self, optim_params: Any = None, *, adam_params: Any = None) -> StandInFuture:
        from tinker import types

        params = optim_params or adam_params
        assert isinstance(params, types.AdamParams)
        if self.poisoned is not None:
            return self._refused("optim_step", {"learning_rate": params.learning_rate})
        future = self.service.future("optim_step", {"learning_rate": params.learning_rate}, None)
        if future.outcome is None and self.failed_backward is not None:
            future.outcome = self.failed_backward
        if future.outcome is None or isinstance(future.outcome, Late):
            self.service.applied += 1
            self.service.moments += 1
            for key, gradient in self.service.gradients.items():
                step = params.learning_rate * (gradient > 0) - params.learning_rate * (gradient < 0)
                self.service.offsets[key] = self.service.offsets.get(key, 0.0) - step
            self.service.gradients.clear()
            future.reply = types.OptimStepResponse(metrics={})
        return future

    def save_state(
        self,
        name: str,
        ttl_seconds: int | None = None,
        overwrite: bool = False,
        user_metadata: dict[str, str] | None = None,
    ) -> StandInFuture:
        from tinker import types

        if self.poisoned is not None:
            return self._refused("save_state", {"name": name})
        future = self.service.future("save_state", {"name": name}, None)
        if future.outcome is None:
            self.service.saved[name] = self.service.applied
            self.service.saved_moments[name] = self.service.moments
            self.service.saved_offsets[name] = dict(self.service.offsets)
            future.reply = types.SaveWeightsResponse(path=f"tinker://run-1/weights/{name}")
        return future

    def save_weights_for_sampler(
        self, name: str, ttl_seconds: int | None = None, user_metadata: dict[str, str] | None = None
    ) -> StandInFuture:
        from tinker import types

        path = f"tinker://run-1/sampler_weights/{name}"
        reply = types.SaveWeightsForSamplerResponse(path=path)
        if self.poisoned is not None:
            return self._refused("save_weights_for_sampler", {"name": name})
        future = self.service.future("save_weights_for_sampler", {"name": name}, reply)
        if future.outcome is None or isinstance(future.outcome, Late):
            self.service.sampler_offsets[path] = dict(self.service.offsets)
        return future

    def save_weights_and_get_sampling_client(
        self,
        name: str | None = None,
        retry_config: Any = None,
        record_stability_info: bool = False,
        kind: str = "snapshot",
    ) -> StandInFuture:
        """A sampler of the weights now (an ephemeral save: no path is kept)."""
        assert name is None, "the name is deprecated and has no effect"
        if self.poisoned is not None:
            return self._refused("save_weights_and_get_sampling_client", {"kind": kind})
        sampler = StandInSamplingClient(self.service, dict(self.service.offsets))
        return self.service.future("save_weights_and_get_sampling_client", {"kind": kind}, sampler)

    def create_sampling_client(
        self, model_path: str, retry_config: Any = None, record_stability_info: bool = False
    ) -> StandInFuture:
        assert model_path in self.service.sampler_offsets, f"no sampler weights saved at {model_path}"
        sampler = StandInSamplingClient(self.service, self.service.sampler_offsets[model_path])
        return self.service.future("create_sampling_client", {"model_path": model_path}, sampler)


def datum_problem(data: list[Any], loss_fn: str, config: Any) -> str | None:
    """Why the service would refuse these Datums for ``loss_fn``, or None: an unknown loss, a missing or
    extra input, a length other than the model input's, a dtype other than the loss's, a config the loss
    does not take."""
    inputs = LOSS_INPUTS.get(loss_fn)
    if inputs is None:
        return f"unknown loss {loss_fn!r}"
    if config is not None and (loss_fn != "ppo" or set(config) != PPO_CONFIG):
        return f"loss_fn_config {dict(config)!r} is not one {loss_fn} takes"
    for i, datum in enumerate(data):
        names = set(datum.loss_fn_inputs)
        if names != set(inputs):
            return f"datum {i}: {loss_fn} takes loss_fn_inputs {sorted(inputs)}, got {sorted(names)}"
        for name, dtype in inputs.items():
            tensor = datum.loss_fn_inputs[name]
            if tensor.dtype != dtype:
                return f"datum {i}: {name} is {tensor.dtype}, not {dtype}"
            if len(tensor.data) != datum.model_input.length:
                return (
                    f"datum {i}: {name} has {len(tensor.data)} entries for {datum.model_input.length} inputs"
                )
            if dtype == "float32" and not all(math.isfinite(v) for v in tensor.data):
                return f"datum {i}: {name} is not finite"
    return None
