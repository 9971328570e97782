"""DPO on a tiny model made in the test: preference pairs rendered as two sequences after one prompt,
the loss at the base is log 2 (the adapter starts as no change), steps lower it on its pairs, the trainer
trains on them end to end, and an example that is no pair is refused."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.clients import _local_models  # noqa: E402
from machine.clients._local_train_data import PairSequence  # noqa: E402
from machine.clients._local_train_session import Session  # noqa: E402
from machine.clients.local_trainer import LocalTrainer  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.runs import Budget, StepMetrics, TrainExample, TrainSettings  # noqa: E402

pytestmark = pytest.mark.anyio
TINY = ("q_proj", "k_proj", "v_proj", "o_proj", "lm_head")
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
