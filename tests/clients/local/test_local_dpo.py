"""DPO on a tiny model made in the test: preference pairs rendered as two sequences after one prompt,
the loss at the base is log 2 (the adapter starts as no change), steps lower it on its pairs, the trainer
trains on them end to end, and an example that is no pair is refused. After a fine-tune, DPO starts from
the live adapter (its weights and shape, no dropout) and measures against the live model; each step
records the chosen answers' drift; the defaults are DPO's; the chosen answers' own loss adds to DPO's."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.budget import Budget  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._dpo import DPO_LEARNING_RATE, start_adapter  # noqa: E402
from machine.clients.local._train_data import PairSequence  # noqa: E402
from machine.clients.local._train_session import Session  # noqa: E402
from machine.clients.local.trainer import LocalTrainer  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.training import Checkpoint, StepMetrics, TrainExample, TrainSettings  # noqa: E402

TINY = ("q_proj", "k_proj", "v_proj", "o_proj", "lm_head")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
"""The live adapter's modules: not the head, which the tiny model ties to its embeddings, so merging it
(as the harness does) would change the input embeddings too, and the merged model would not be the one
trained."""
BETA = 0.5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    yield f"local:{folder}"
    _local_models.forget()


def pairs(count: int = 4) -> list[TrainExample]:
    return [
        TrainExample(
            messages=[
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": f"hello {i}"},
                {"role": "assistant", "content": "thanks, bye!"},
            ],
            targets=[2],
            rejected=[{"role": "assistant", "content": "the lazy dog"}],
            run_id=f"r{i}",
        )
        for i in range(count)
    ]


def settings(base: str, **changes: object) -> TrainSettings:
    made = {"epochs": 3, "batch_size": 2, "learning_rate": 2e-2, "method": "dpo", "beta": BETA, **changes}
    return TrainSettings(base_model=base, **made)  # type: ignore[arg-type]


def test_each_pair_renders_to_two_sequences_after_the_same_prompt(tiny: str) -> None:
    prepared = LocalTrainer(rank=8, target_modules=TINY).prepare(pairs(), settings(tiny))
    assert (prepared.examples, prepared.sequences, prepared.dropped) == (4, 4, 0)
    pair: PairSequence = prepared.data[0]
    chosen, rejected = pair.chosen, pair.rejected
    prompt = chosen.labels.index(next(label for label in chosen.labels if label != -100))
    assert chosen.input_ids[:prompt] == rejected.input_ids[:prompt]  # one prompt, two answers
    assert chosen.input_ids[prompt:] != rejected.input_ids[prompt:]
    assert prepared.target_tokens == sum(p.target_tokens for p in prepared.data)


async def test_dpo_steps_lower_the_dpo_loss_on_the_pairs(tiny: str) -> None:
    trainer = LocalTrainer(rank=8, target_modules=TINY)
    chosen = settings(tiny)
    data: list[PairSequence] = trainer.prepare(pairs(), chosen).data
    session = Session(_local_models.load(tiny), trainer.lora(chosen), 2e-2, seed=0)
    session.measure(data)  # the reference: a new adapter is no change, so the base
    before = float(session.dpo_loss(data, BETA).detach())
    assert before == pytest.approx(math.log(2), abs=1e-4)  # the adapter starts as no change at all
    for _ in range(6):
        session.dpo_step(data, BETA, 2e-2)
    after = float(session.dpo_loss(data, BETA).detach())
    assert after < 0.9 * before, (before, after)
    margins = session.log_probs([p.chosen for p in data]) - session.log_probs([p.rejected for p in data])
    with session.model.disable_adapter():
        base = session.log_probs([p.chosen for p in data]) - session.log_probs([p.rejected for p in data])
    assert bool((margins > base).all())  # each pair's chosen answer gained on its rejected one


async def test_the_trainer_trains_on_pairs_end_to_end(tiny: str, tmp_path: Path) -> None:
    trainer = LocalTrainer(rank=8, target_modules=TINY)
    chosen = settings(tiny)
    steps: list[StepMetrics] = []
    checkpoint = await trainer.train(
        trainer.prepare(pairs(), chosen), chosen, folder=tmp_path, budget=Budget(0.0), on_step=steps.append
    )
    assert [s.step for s in steps] == list(range(1, 7)) and checkpoint.step == 6
    losses = [s.loss for s in steps if s.loss is not None]
    assert losses[0] == pytest.approx(math.log(2), abs=1e-4) and losses[-1] < losses[0], losses
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()


def test_an_example_that_is_no_pair_is_refused(tiny: str) -> None:
    lone = pairs(1)[0].model_copy(update={"rejected": None})
    with pytest.raises(BadInputError, match="is no preference pair"):
        LocalTrainer(rank=8, target_modules=TINY).prepare([lone], settings(tiny))


def chosen_only(count: int = 4) -> list[TrainExample]:
    """The pairs' chosen answers as SFT examples: what a fine-tune before DPO learned."""
    return [p.model_copy(update={"rejected": None}) for p in pairs(count)]


@pytest.fixture(scope="module")
def live(tiny: str, tmp_path_factory: pytest.TempPathFactory) -> Checkpoint:
    """The live version after a fine-tune: an adapter that moved well away from the base."""
    trainer = LocalTrainer(rank=8, target_modules=ATTENTION)
    sft = TrainSettings(base_model=tiny, epochs=4, batch_size=2, learning_rate=5e-2)
    folder = tmp_path_factory.mktemp("sft")

    async def fit() -> Checkpoint:
        return await trainer.train(
            trainer.prepare(chosen_only(), sft),
            sft,
            folder=folder,
            budget=Budget(0.0),
            on_step=lambda _m: None,
        )

    return anyio.run(fit)


def references(
    base: str, lora_from: LocalTrainer, data: list[PairSequence], chosen: TrainSettings
) -> list[object]:
    """Each pair's log-probabilities under ``base`` (a new adapter on it is no change)."""
    session = Session(_local_models.load(base), lora_from.lora(chosen), 1e-5, seed=0)
    session.measure(data)
    return [p.reference for p in data]


async def test_dpo_starts_from_the_live_adapter_and_measures_against_the_live_model(
    tiny: str, live: Checkpoint, tmp_path: Path
) -> None:
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    trainer = LocalTrainer(target_modules=TINY)  # the live adapter's modules win, as its rank does
    chosen = settings(tiny, start=live, learning_rate=None)
    adapter = start_adapter(chosen, None)
    assert adapter is not None and live.model == f"{tiny}+{adapter}"
    lora = trainer.lora(chosen)
    assert (lora.rank, lora.target_modules, lora.dropout) == (8, tuple(sorted(ATTENTION)), 0.0)  # no dropout
    data: list[PairSequence] = trainer.prepare(pairs(), chosen).data
    session = Session(_local_models.load(tiny), lora, 1e-5, seed=0, start=adapter)
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    started = get_peft_model_state_dict(session.model)
    assert saved.keys() == started.keys() and all(bool((saved[k] == started[k]).all()) for k in saved)
    session.measure(data)
    fresh = LocalTrainer(rank=8, target_modules=ATTENTION)
    live_refs = references(
        live.model, fresh, [PairSequence(p.chosen, p.rejected) for p in data], settings(tiny)
    )
    base_refs = references(tiny, fresh, [PairSequence(p.chosen, p.rejected) for p in data], settings(tiny))
    for ours, lived, based in zip([p.reference for p in data], live_refs, base_refs, strict=True):
        assert ours == pytest.approx(lived, abs=1e-3) and ours != pytest.approx(based, abs=1e-2)

    steps: list[StepMetrics] = []
    made = trainer.prepare(pairs(), chosen)
    checkpoint = await trainer.train(made, chosen, folder=tmp_path, budget=Budget(0.0), on_step=steps.append)
    assert steps[0].loss == pytest.approx(math.log(2), abs=1e-4)  # the policy starts as its reference
    assert steps[0].chosen_drift == pytest.approx(0.0, abs=1e-4)
    assert all(s.chosen_drift is not None for s in steps) and steps[-1].chosen_drift != steps[0].chosen_drift
    config = (tmp_path / "adapter" / "adapter_config.json").read_text()
    assert '"r": 8' in config and '"lora_dropout": 0.0' in config and checkpoint.step == len(steps)


def test_dpo_defaults_and_a_shape_that_is_not_the_live_adapters(tiny: str, live: Checkpoint) -> None:
    trainer = LocalTrainer(rank=8, target_modules=TINY)
    made = trainer.prepare(pairs(), settings(tiny, learning_rate=None))
    assert made.learning_rate == DPO_LEARNING_RATE and "DPO" in made.learning_rate_is
    assert trainer.lora(settings(tiny)).dropout == 0.0  # DPO's: none, as TRL disables it
    assert trainer.lora(settings(tiny, method="sft")).dropout == 0.05
    with pytest.raises(BadInputError, match=r"rank 4 \(the live adapter's is 8\)"):
        trainer.prepare(pairs(), settings(tiny, start=live, rank=4))


def test_the_chosen_answers_own_loss_adds_to_dpos(tiny: str) -> None:
    trainer = LocalTrainer(rank=8, target_modules=TINY)
    chosen = settings(tiny)
    data: list[PairSequence] = trainer.prepare(pairs(2), chosen).data
    plain = Session(_local_models.load(tiny), trainer.lora(chosen), 1e-5, seed=0)
    nll = Session(_local_models.load(tiny), trainer.lora(chosen), 1e-5, seed=0, rpo_alpha=2.0)
    plain.measure(data)
    loss, drift = plain.dpo_terms(data, BETA)
    with_nll, _ = nll.dpo_terms(data, BETA)
    per_token = [-float(plain.log_probs([p.chosen])[0]) / p.chosen.target_tokens for p in data]
    assert float(with_nll - loss) == pytest.approx(2.0 * sum(per_token) / 2, rel=1e-4)
    assert float(drift) == pytest.approx(0.0, abs=1e-5)  # nothing moved yet
