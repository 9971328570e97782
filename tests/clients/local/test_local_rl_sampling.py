"""RL's sampling on a tiny Llama made in the test (random weights, a fixed seed, one torch thread): the
harness in RL mode records each turn's exact ids and log q, which is the policy's own log-softmax at T (the
first step's ratio is 1); the sampler draws from the whole softmax, no top-k; a two-turn tool exchange is
one sequence training the model's tokens only; records are bounded and released; and RL resumed from a
saved state draws the same samples and reaches the same weights as a run never stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.tiny_model import needs_local_stack, restored, steer, tiny_model_folder

needs_local_stack()

from machine.budget import Budget  # noqa: E402
from machine.clients._rl_turns import (  # noqa: E402
    Records,
    RLSequence,
    TurnRecord,
    rl_seed,
    sequences_of,
)
from machine.clients.local import LocalHarness, RLSampling  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._batch import TOP_K, Job, _RowSampler  # noqa: E402
from machine.clients.local._rl import RLLoss, padded, token_logprobs  # noqa: E402
from machine.clients.local._train_session import Lora, Session  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.runs import HarnessRequest, ToolContext, run_seed, tool  # noqa: E402

LORA = Lora(4, 8, ("q_proj", "v_proj"), 0.05)


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as local models get on 2 cores (``_threads``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model", seed=2)
    yield f"local:{folder}"
    _local_models.forget()


def request(model: str, run_id: str, seed: int | None, **options: Any) -> HarnessRequest:
    return HarnessRequest(
        run_id=run_id,
        machine="m",
        instructions="Answer.",
        input=options.pop("input", f"question {run_id}"),
        model=model,
        tools=options.pop("tools", []),
        tool_context=ToolContext(run_id=run_id),
        budget=Budget(None),
        seed=seed,
        **options,
    )


def session(model: str, *, moved: bool = False) -> Session:
    """A session for RL on the tiny model; ``moved``: its adapter's B made non-zero, so the policy is not
    the base and a log q taken from the base would not match."""
    import torch

    made = Session(_local_models.load(model), LORA, 1e-2, seed=0, rl=True)
    if moved:
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for name, weight in made.model.named_parameters():
                if "lora_B" in name:
                    weight.copy_(0.5 * torch.randn(weight.shape, generator=generator))
    return made


def own_logprobs(model: Any, sequence: RLSequence, temperature: float) -> list[float]:
    """log p of each of the sequence's trained tokens under ``model`` at ``temperature``."""
    import torch

    batch = padded([sequence], "cpu")
    with torch.no_grad():
        values = token_logprobs(model, batch["ids"], batch["attention"], batch["keep"], temperature)[0]
    return [float(v) for v in values]


async def sample(harness: LocalHarness, model: str, runs: list[tuple[str, int]]) -> list[list[TurnRecord]]:
    """Each (run id, seed) run concurrently (batched), and its turns taken from the harness's records."""

    async def one(run_id: str, seed: int) -> None:
        await harness.run(request(model, run_id, seed, input="x" * (seed % 5 + 1)))

    async with anyio.create_task_group() as group:
        for run_id, seed in runs:
            group.start_soon(one, run_id, seed)
    assert harness.rl is not None
    taken = [harness.rl.records.take(run_id) for run_id, _ in runs]
    assert all(turns is not None for turns in taken)
    return [turns for turns in taken if turns is not None]


async def test_the_recorded_log_q_is_the_policys_own_so_the_first_ratio_is_one(tiny: str) -> None:
    made = session(tiny, moved=True)
    mode = RLSampling(seed=7, step=1, temperature=0.7, policy=made.policy())
    harness = LocalHarness(max_new_tokens=8, window_s=0.3, max_batch=3, rl=mode)
    runs = await sample(harness, tiny, [("a", 1), ("b", 2), ("c", 3)])
    assert len(mode.records) == 0 and mode.records.tokens == 0  # taken: released
    batch = [s for turns in runs for s in sequences_of(turns, 1.0)]
    for turns, sequence in zip(runs, batch, strict=True):
        (turn,) = turns
        assert len(turn.logprobs) == len(turn.tokens) > 0
        assert sequence.input_ids == turn.prompt + turn.tokens
        own = own_logprobs(made.model, sequence, 0.7)
        assert own == pytest.approx(turn.logprobs, abs=2e-5)
        base = made.model.disable_adapter()
        with base:
            assert own_logprobs(made.model, sequence, 0.7) != pytest.approx(turn.logprobs, abs=1e-3)
    metrics = made.rl_step(batch, RLLoss(temperature=0.7), 8192, 1e-2)
    assert metrics.ratio == pytest.approx(1.0, abs=1e-5) and made.done == 1
    made.close()


async def test_a_models_own_penalties_do_not_reshape_what_rl_samples(tiny: str) -> None:
    """transformers fills a config's unset fields from the model's own: a repetition penalty or a minimum
    length there would make log q differ from the log-softmax the loss computes."""
    loaded = _local_models.load(tiny)
    own = loaded.model.generation_config
    saved = (own.repetition_penalty, own.min_new_tokens)
    own.repetition_penalty, own.min_new_tokens = 5.0, 6
    try:
        mode = RLSampling(seed=3, step=1, temperature=0.9)
        (turns,) = await sample(LocalHarness(max_new_tokens=8, rl=mode), tiny, [("p", 4)])
    finally:
        own.repetition_penalty, own.min_new_tokens = saved
    (sequence,) = sequences_of(turns, 1.0)
    assert own_logprobs(loaded.model, sequence, 0.9) == pytest.approx(turns[0].logprobs, abs=2e-5)


def draw(job: Job, logits: Any, draws: int) -> list[int]:
    """``draws`` tokens from ``_RowSampler`` over fixed logits, each fed back as ``generate`` would."""
    import torch

    sampler = _RowSampler([job], "cpu")
    ids = torch.zeros((1, 1), dtype=torch.long)
    tokens = []
    for _ in range(draws):
        token = int(sampler(ids, logits.unsqueeze(0)).argmax())
        tokens.append(token)
        ids = torch.tensor([[token]])
    sampler.settle(ids)
    return tokens


def test_the_sampler_draws_from_the_whole_softmax_at_t_and_records_log_q() -> None:
    """RL's rows draw each token at softmax(logits / T), the tail past the top-k included, and log q is
    exactly log_softmax(logits / T) of the token drawn; an ordinary row never leaves the top-k."""
    import torch

    vocab, temperature, draws = 80, 0.8, 3000
    logits = torch.cat([torch.full((TOP_K,), 1.0), torch.full((vocab - TOP_K,), 0.5)])
    logits[:5] = torch.tensor([3.0, 2.5, 2.0, 1.5, 1.2])
    logq = torch.log_softmax(logits / temperature, dim=-1)
    job = Job([1], draws, temperature, seed=5, records=True)
    tokens = draw(job, logits, draws)
    assert job.logprobs == [float(logq[t]) for t in tokens]
    counts = torch.bincount(torch.tensor(tokens), minlength=vocab).double()
    groups = [range(5), range(5, TOP_K), range(TOP_K, vocab)] + [[t] for t in range(3)]
    for group in groups:
        p = float(logq[list(group)].exp().sum())
        seen = float(counts[list(group)].sum()) / draws
        assert abs(seen - p) < 4 * (p * (1 - p) / draws) ** 0.5 + 1e-9, (group, seen, p)
    assert float(logq[TOP_K:].exp().sum()) > 0.15  # the tail is no rounding error
    plain = draw(Job([1], draws, temperature, seed=5), logits, 500)
    assert max(plain) < TOP_K


async def test_a_two_turn_tool_exchange_is_one_sequence_training_only_the_models_tokens(tiny: str) -> None:
    loaded = _local_models.load(tiny)
    replies = ['<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>', "The sum is 3."]
    mode = RLSampling(seed=0, step=1)
    with restored(loaded):
        steer(loaded, lambda prompt: replies['<tool_response name="add">' in prompt])
        result = await LocalHarness(max_new_tokens=60, rl=mode).run(request(tiny, "t", 3, tools=[add]))
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant"]
    turns = mode.records.take("t")
    assert turns is not None and len(turns) == 2
    first, second = turns
    assert first.tokens[-1] in loaded.stop_ids and first.stopped and second.stopped
    assert second.prompt[: first.size] == first.prompt + first.tokens
    (sequence,) = sequences_of(turns, 0.5)
    assert sequence.input_ids == second.prompt + second.tokens
    trained = [t for t, m in zip(sequence.input_ids, sequence.mask, strict=True) if m]
    assert trained == first.tokens + second.tokens
    between = sequence.input_ids[first.size : len(second.prompt)]
    assert not any(sequence.mask[first.size : len(second.prompt)])
    assert '<tool_response name="add">\n3\n</tool_response>' in loaded.tokenizer.decode(between)
    assert loaded.tokenizer.decode(trained, skip_special_tokens=True) == replies[0] + replies[1]
    kept = [q for q, m in zip(sequence.sampler_logprobs, sequence.mask, strict=True) if m]
    assert kept == pytest.approx(own_logprobs(loaded.model, sequence, 1.0), abs=2e-5)  # even steered


def test_turns_that_do_not_extend_each_other_are_sequences_of_their_own() -> None:
    one = TurnRecord([1, 2, 3], [4, 5], [-1.0, -2.0], True)
    other = TurnRecord([1, 9, 3, 4, 5, 6], [7], [-3.0], True)
    empty = TurnRecord([1, 2, 3, 4, 5, 6], [], [], False)
    first, second = sequences_of([one, empty, other], -0.25)
    assert (first.input_ids, first.mask) == ([1, 2, 3, 4, 5], [False] * 3 + [True] * 2)
    assert first.sampler_logprobs == [0.0, 0.0, 0.0, -1.0, -2.0] and first.advantage == -0.25
    assert second.input_ids == [1, 9, 3, 4, 5, 6, 7] and second.mask == [False] * 6 + [True]


def test_records_are_bounded_and_released() -> None:
    records = Records(max_runs=2, max_tokens=100)
    turn = TurnRecord([1] * 10, [2] * 5, [0.0] * 5, True)
    for run in ("r1", "r2", "r3"):
        records.add(run, turn)
    assert (len(records), records.dropped, records.tokens) == (2, 1, 30)
    records.add("r1", turn)  # a dropped run's later turns would be partial: not kept
    assert records.take("r1") is None and len(records) == 2
    assert records.take("r2") == [turn] and records.take("r2") is None
    records.add("big", TurnRecord([1] * 90, [2] * 5, [0.0] * 5, True))  # 15 + 100 tokens > 100
    assert records.take("r3") is None and records.dropped == 2
    assert records.take("big") is not None and (len(records), records.tokens) == (0, 0)


def test_seeds_follow_seed_step_case_and_turn() -> None:
    run = run_seed("case-1", 0)
    seeds = {
        rl_seed(s, step, r, turn) for s in (0, 1) for step in (1, 2) for r in (run, 5) for turn in (0, 1)
    }
    assert len(seeds) == 16 and rl_seed(0, 1, run, 0) == rl_seed(0, 1, run_seed("case-1", 0), 0)
    assert rl_seed(0, 1, None, 0) is None


async def test_rl_does_not_sample_greedily(tiny: str) -> None:
    harness = LocalHarness(max_new_tokens=4, rl=RLSampling(seed=0, step=1))
    with pytest.raises(BadInputError, match="temperature above 0"):
        await harness.run(request(tiny, "g", 1, temperature=0.0))


CASES = ("c1", "c2")
GROUP = 3


async def rl_steps(made: Session, model: str, steps: range, drawn: list[list[int]]) -> None:
    """RL steps on the tiny model: each samples a group per case from the policy, rewards the share of
    even token ids, centres the rewards in the group and takes one step; ``drawn`` gets every sample."""
    for number in steps:
        mode = RLSampling(seed=11, step=number, policy=made.policy())
        harness = LocalHarness(max_new_tokens=6, window_s=5.0, max_batch=GROUP, rl=mode)
        batch = []
        for case in CASES:
            runs = [(f"{number}-{case}-{i}", run_seed(case, i) or 0) for i in range(GROUP)]
            turns = [t for ts in await sample(harness, model, runs) for t in ts]
            drawn.extend(t.tokens for t in turns)
            rewards = [sum(token % 2 == 0 for token in t.tokens) / len(t.tokens) for t in turns]
            mean = sum(rewards) / len(rewards)
            batch.extend(s for t, r in zip(turns, rewards, strict=True) for s in sequences_of([t], r - mean))
        made.rl_step(batch, RLLoss(), 8192, 5e-2)


async def test_rl_resumed_from_a_saved_state_reaches_the_same_weights(tiny: str, tmp_path: Path) -> None:
    import torch

    whole, drawn_whole = session(tiny), []
    await rl_steps(whole, tiny, range(1, 5), drawn_whole)
    whole.close()
    first, drawn = session(tiny), []
    await rl_steps(first, tiny, range(1, 3), drawn)
    first.save_state(tmp_path / "state", tiny)
    first.close()
    resumed = session(tiny)
    resumed.restore(tmp_path / "state")
    assert resumed.done == 2
    await rl_steps(resumed, tiny, range(resumed.done + 1, 5), drawn)
    resumed.close()
    assert drawn == drawn_whole
    ours, theirs = dict(whole.model.named_parameters()), dict(resumed.model.named_parameters())
    moved = [n for n, w in ours.items() if "lora_B" in n and bool(w.abs().sum() > 0)]
    assert moved, "the steps moved no LoRA weight"
    assert all(torch.equal(ours[n], theirs[n]) for n in ours), "resumed weights differ"


def test_a_session_for_rl_has_no_dropout(tiny: str) -> None:
    import torch

    made = session(tiny)
    assert not made.model.training
    rates = [m.p for n, m in made.model.named_modules() if isinstance(m, torch.nn.Dropout)]
    assert all(p == 0.0 for p in rates)
