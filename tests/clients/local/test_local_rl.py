"""RL's loss and step on tiny GPT-2 and Llama models made in the test (random weights, a fixed seed, a
LoRA adapter as the local trainer makes, one torch thread): a flat group moves no weight, the prompt's and
a tool result's positions get no gradient, the gradient matches finite differences, micro-batches add up
to the batch, the ratio is 1 on the policy's own log-probabilities and PPO clips as the cookbook does, and
the model's own samples, rewarded for one token, learn to write it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.tiny_model import needs_local_stack

needs_local_stack()

from machine.clients.local._rl import (  # noqa: E402
    RLLoss,
    RLSequence,
    padded,
    policy_loss,
    rl_loss,
    rl_step,
    token_logprobs,
)
from machine.clients.local._train_session import Lora  # noqa: E402

VOCAB = 64
PROMPT = [5, 9, 13]


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as local models get on 2 cores (``_threads``): a model this small gains nothing
    from a second, and a second core busy elsewhere costs it tenfold."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_policy(
    family: str = "gpt2", *, double: bool = False, modules: tuple[str, ...] = (), seed: int = 0
) -> Any:
    """A two-layer GPT-2 (or Llama) of random weights, without dropout, with a new LoRA adapter (no dropout
    either: the ratio is exact). GPT-2 for float64, which Llama's norms and rotary embeddings drop to
    float32."""
    import torch
    from peft import get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    if family == "gpt2":
        shape = GPT2Config(
            n_layer=2,
            n_embd=32,
            n_head=2,
            vocab_size=VOCAB,
            n_positions=64,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            tie_word_embeddings=False,  # the head LoRA may wrap is its own
        )
        base: Any = GPT2LMHeadModel(shape)
    else:
        config = LlamaConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
        base = LlamaForCausalLM(config)
    default = ("c_attn",) if family == "gpt2" else ("q_proj", "v_proj")
    lora = Lora(4, 8, modules or default, 0.0).config()
    lora.fan_in_fan_out = family == "gpt2"  # GPT-2's attention is a Conv1D, its weight transposed
    return get_peft_model(base.double() if double else base, lora)


def moved(model: Any, seed: int = 1) -> Any:
    """The adapter's B matrices made non-zero, so every LoRA weight has a gradient (a new adapter's B is
    0, so its A's have none)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "lora_B" in name:
                weight.copy_(0.3 * torch.randn(weight.shape, generator=generator, dtype=weight.dtype))
    return model


def own_logprobs(model: Any, sequences: list[RLSequence]) -> list[list[float]]:
    """Each sequence's log p_θ per token under ``model`` as it is (0 where not masked)."""
    import torch

    rows = []
    for sequence in sequences:
        batch = padded([sequence], "cpu")
        with torch.no_grad():
            values = iter(token_logprobs(model, batch["ids"], batch["attention"], batch["keep"])[0].tolist())
        rows.append([next(values) if kept else 0.0 for kept in sequence.mask])
    return rows


def with_tool_result() -> list[RLSequence]:
    """A prompt, a reply, a tool result, a second reply; and a shorter one (padding in the batch)."""
    ids = [*PROMPT, 20, 21, 22, 40, 41, 42, 43, 23, 24]
    mask = [False] * 3 + [True] * 3 + [False] * 4 + [True] * 2
    short = [*PROMPT, 30, 31]
    return [
        RLSequence(ids, mask, [-4.0] * len(ids), 0.7),
        RLSequence(short, [False] * 3 + [True] * 2, [-4.0] * 5, -0.4),
    ]


def weights(model: Any) -> dict[str, Any]:
    return {name: w.detach().clone() for name, w in model.named_parameters()}


def sgd(model: Any) -> Any:
    """An optimizer that leaves the weights as they are (rate 0), to read the gradients a step made."""
    import torch

    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.0)


def test_a_group_with_equal_rewards_moves_no_weight_even_after_a_step() -> None:
    import torch

    model = tiny_policy()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    rl_step(model, optimizer, with_tool_result(), RLLoss())  # AdamW now has momentum
    before = weights(model)
    flat = [RLSequence(s.input_ids, s.mask, s.sampler_logprobs, 0.0) for s in with_tool_result()]
    none = RLSequence(flat[0].input_ids, flat[0].mask, flat[0].sampler_logprobs, None)
    metrics = rl_step(model, optimizer, [*flat, none], RLLoss(kl=0.1))
    assert (metrics.sequences, metrics.skipped, metrics.tokens, metrics.grad_norm) == (0, 3, 0, 0.0)
    after = weights(model)
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_a_skipped_sequence_is_counted_and_only_dilutes_the_batch() -> None:
    """A sequence of advantage 0 adds no gradient; the loss is per sequence given, so it halves the
    other's."""
    model = moved(tiny_policy(double=True))
    reply = with_tool_result()[0]
    flat = RLSequence(reply.input_ids, reply.mask, reply.sampler_logprobs, 0.0)
    alone = sgd(model)
    rl_step(model, alone, [reply], RLLoss(max_grad_norm=1e9))
    grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    metrics = rl_step(model, alone, [reply, flat], RLLoss(max_grad_norm=1e9))
    assert (metrics.sequences, metrics.skipped, metrics.tokens) == (1, 1, 5)
    halves = [p.grad for p in model.parameters() if p.requires_grad]
    for whole, half in zip(grads, halves, strict=True):
        assert float((whole / 2 - half).abs().max()) < 1e-12


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_the_prompt_and_a_tool_result_get_no_gradient(family: str) -> None:
    """The final hidden state at position t feeds only the logits predicting token t + 1: its gradient
    is zero exactly where that token is not the model's own (the prompt, the tool result, padding)."""
    model = moved(tiny_policy(family))
    seen: list[Any] = []

    def keep_hidden(_module: Any, _args: Any, output: Any) -> None:
        if output.last_hidden_state.requires_grad:  # not the base's forward, for the KL
            output.last_hidden_state.retain_grad()
            seen.append(output.last_hidden_state)

    hook = model.get_base_model().get_decoder().register_forward_hook(keep_hidden)
    sequences = with_tool_result()
    loss, _ = rl_loss(model, sequences, RLLoss(kl=0.1), len(sequences))
    loss.backward()
    hook.remove()
    grad = seen[0].grad  # [rows, positions, hidden]
    for row, sequence in enumerate(sequences):
        for position in range(grad.shape[1]):
            predicts = position + 1
            mine = predicts < len(sequence.mask) and sequence.mask[predicts]
            assert bool(grad[row, position].abs().sum() > 0) == mine, (row, position)


@pytest.mark.parametrize(
    ("kind", "kl", "temperature"), [("importance_sampling", 0.0, 1.0), ("ppo", 0.3, 0.7)]
)
def test_the_gradient_matches_finite_differences(kind: str, kl: float, temperature: float) -> None:
    import torch

    model = moved(tiny_policy(double=True))
    sequences = with_tool_result()
    drawn = torch.Generator().manual_seed(3)
    for sequence, own in zip(sequences, own_logprobs(model, sequences), strict=True):
        noise = (torch.rand(len(own), generator=drawn, dtype=torch.float64) - 0.5).tolist()
        sequence.sampler_logprobs = [value + 0.6 * n for value, n in zip(own, noise, strict=True)]
    config = RLLoss(kind=kind, kl=kl, temperature=temperature)

    def loss() -> float:
        with torch.no_grad():
            return float(rl_loss(model, sequences, config, len(sequences))[0])

    rl_loss(model, sequences, config, len(sequences))[0].backward()
    chosen = [(n, p) for n, p in model.named_parameters() if p.requires_grad][:4]
    h = 1e-6
    for name, weight in chosen:
        for index in [(0, 0), (1, 2), (weight.shape[0] - 1, weight.shape[1] - 1)]:
            with torch.no_grad():
                weight[index] += h
                up = loss()
                weight[index] -= 2 * h
                down = loss()
                weight[index] += h
            numeric, exact = (up - down) / (2 * h), float(weight.grad[index])
            assert numeric == pytest.approx(exact, rel=1e-5, abs=1e-9), (name, index)


def test_micro_batches_add_up_to_the_whole_batchs_gradient() -> None:
    model = moved(tiny_policy(double=True))  # float32 would differ by its rounding, padded or not
    optimizer = sgd(model)
    rl_step(model, optimizer, with_tool_result(), RLLoss(max_grad_norm=1e9))
    whole = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    rl_step(model, optimizer, with_tool_result(), RLLoss(max_grad_norm=1e9), max_tokens=1)
    parts = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(float((a - b).abs().max()) < 1e-12 for a, b in zip(whole, parts, strict=True))


def test_without_a_kl_weight_the_base_is_never_run() -> None:
    model = moved(tiny_policy())

    def refused() -> Any:
        raise AssertionError("the base ran with the KL penalty off")

    model.disable_adapter = refused
    metrics = rl_step(model, sgd(model), with_tool_result(), RLLoss())
    assert metrics.kl is None and metrics.clipped is None and metrics.grad_norm > 0


def test_a_sequence_must_say_each_tokens_mask_and_logprob() -> None:
    with pytest.raises(ValueError, match="a mask and a log-probability per token"):
        RLSequence([1, 2, 3], [False, True], [0.0, 0.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="no context"):
        RLSequence([1, 2], [True, True], [0.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="unknown RL loss"):
        RLLoss(kind="grpo")


def test_the_ratio_is_one_on_the_policys_own_logprobs() -> None:
    model = moved(tiny_policy())
    sequences = with_tool_result()
    for sequence, own in zip(sequences, own_logprobs(model, sequences), strict=True):
        sequence.sampler_logprobs = own
    metrics = rl_step(model, sgd(model), sequences, RLLoss(kind="ppo", kl=0.1))
    assert metrics.ratio == pytest.approx(1.0, abs=1e-6)
    assert metrics.clipped == 0.0 and metrics.kl is not None and metrics.kl > 0  # the adapter moved it
    assert (metrics.sequences, metrics.skipped, metrics.tokens) == (2, 0, 7)
    assert metrics.entropy is not None and 0 < metrics.entropy <= math.log(VOCAB)
    penalty = 0.1 * metrics.kl * metrics.tokens  # β·Σ k3
    assert metrics.loss == pytest.approx((-(0.7 * 5 - 0.4 * 2) + penalty) / 2, rel=1e-5)  # r = 1


def test_ppo_clips_the_ratio_where_it_would_gain_beyond_epsilon() -> None:
    """min(r·A, clip(r)·A): a ratio past 1 + ε with A > 0, or below 1 − ε with A < 0, is held (no gradient);
    the other way round it is not, and importance sampling never clips."""
    import torch

    ratios = torch.tensor([0.5, 1.0, 1.5, 1.5, 0.5], dtype=torch.float64)
    advantages = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    sampler = torch.full((5,), -2.0, dtype=torch.float64)
    logprobs = (sampler + ratios.log()).requires_grad_()
    loss, ratio, clipped = policy_loss(logprobs, sampler, advantages, "ppo", 0.2)
    assert float(loss.detach()) == pytest.approx(-(0.5 + 1.0 + 1.2 - 1.5 - 0.8))
    assert clipped.tolist() == [False, False, True, False, True]
    assert ratio.tolist() == pytest.approx(ratios.tolist())
    loss.backward()
    assert logprobs.grad is not None
    assert logprobs.grad.tolist() == pytest.approx([-0.5, -1.0, 0.0, 1.5, 0.0])
    plain, _, none = policy_loss(logprobs, sampler, advantages, "importance_sampling")
    assert float(plain.detach()) == pytest.approx(-float((ratios * advantages).sum()))
    assert not bool(none.any())


TARGET = 7


def sample(model: Any, group: int, length: int, generator: Any) -> list[RLSequence]:
    """``group`` replies to the prompt sampled at temperature 1 from ``model`` itself, each token's log q
    recorded as it was drawn; the advantage is the share of tokens equal to TARGET minus the group's mean."""
    import torch

    ids = torch.tensor([PROMPT] * group)
    drawn = []
    with torch.no_grad():
        for _ in range(length):
            logq = torch.log_softmax(model(input_ids=ids).logits[:, -1].float(), dim=-1)
            token = torch.multinomial(logq.exp(), 1, generator=generator)
            drawn.append(logq.gather(-1, token))
            ids = torch.cat([ids, token], dim=1)
    logq_rows = torch.cat(drawn, dim=1).tolist()
    rewards = [float((row[len(PROMPT) :] == TARGET).float().mean()) for row in ids]
    mean = sum(rewards) / group
    return [
        RLSequence(
            row.tolist(),
            [False] * len(PROMPT) + [True] * length,
            [0.0] * len(PROMPT) + logq,
            reward - mean,
        )
        for row, logq, reward in zip(ids, logq_rows, rewards, strict=True)
    ]


def test_the_mean_reward_rises_on_the_models_own_samples() -> None:
    """Two groups of 8 a step, sampled from the policy as it is, trained on with the importance-sampling
    loss: the reward (the share of TARGET tokens, chance 1/64 at the start) climbs within 16 steps
    (half a second on one thread)."""
    import torch

    model = tiny_policy("llama", modules=("q_proj", "v_proj", "lm_head"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2)
    generator = torch.Generator().manual_seed(0)
    rewards = []
    for _ in range(16):
        batch = [s for _ in range(2) for s in sample(model, 8, 6, generator)]
        rewards.append(mean_reward(batch))
        metrics = rl_step(model, optimizer, batch, RLLoss())
        if metrics.sequences:  # one step a batch: sampled from this very policy
            assert metrics.ratio == pytest.approx(1.0, abs=1e-4)
    first, last = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert first < 0.1 and last > 0.5, rewards


def mean_reward(batch: list[RLSequence]) -> float:
    """The share of the batch's sampled tokens that are TARGET."""
    hits = [sum(t == TARGET for t, m in zip(s.input_ids, s.mask, strict=True) if m) for s in batch]
    return sum(hits) / sum(s.target_tokens for s in batch)
