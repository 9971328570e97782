"""The local trainer on a tiny model made in the test (no download): the loss falls on a fixed example set,
the adapter saves, loads through the local harness and changes what it writes, a resumed training ends with
the same weights as one never stopped, and the composition picks it for a ``local:`` model."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

from machine.budget import Budget  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.clients.local._train_session import STATE_FILE, Lora, plan  # noqa: E402
from machine.clients.local.trainer import LocalTrainer  # noqa: E402
from machine.errors import BadInputError  # noqa: E402
from machine.ops import make_trainer  # noqa: E402
from machine.runs import HarnessRequest, ToolContext  # noqa: E402
from machine.training import Checkpoint, StepMetrics, TrainExample, TrainSettings  # noqa: E402

REPLY = "thanks, bye!"
TINY = ("q_proj", "k_proj", "v_proj", "o_proj", "lm_head")
"""So small a model's hidden states are too weak to move its tied head's logits: the head learns too."""


def lora(**options: Any) -> LocalTrainer:
    return LocalTrainer(**{"rank": 8, "target_modules": TINY, **options})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model")
    yield f"local:{folder}"
    _local_models.forget()


def examples(count: int = 6) -> list[TrainExample]:
    return [
        TrainExample(
            messages=[
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": f"hello {i}"},
                {"role": "assistant", "content": REPLY},
            ],
            targets=[2],
            run_id=f"r{i}",
        )
        for i in range(count)
    ]


def settings(base: str, **changes: Any) -> TrainSettings:
    return TrainSettings(base_model=base, **{"epochs": 4, "batch_size": 3, "learning_rate": 3e-2, **changes})


async def fit(
    trainer: LocalTrainer, base: str, folder: Path, resume: Checkpoint | None = None, **changes: Any
) -> tuple[Checkpoint, list[StepMetrics]]:
    chosen = settings(base, **changes)
    steps: list[StepMetrics] = []
    prepared = trainer.prepare(examples(), chosen)
    budget = Budget(0.0)
    found = await trainer.train(
        prepared, chosen, folder=folder, budget=budget, on_step=steps.append, resume=resume
    )
    assert budget.spent == 0.0  # free, and never refused under a budget of nothing
    return found, steps


async def test_the_loss_falls_and_every_step_is_reported(tiny: str, tmp_path: Path) -> None:
    checkpoint, steps = await fit(lora(), tiny, tmp_path, epochs=8)
    assert [m.step for m in steps] == list(range(1, 17)) and checkpoint.step == 16
    assert {m.epoch for m in steps} == set(range(1, 9))
    losses = [m.loss for m in steps if m.loss is not None]
    assert len(losses) == 16
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3, losses
    first = steps[0]
    assert first.sequences == 3 and first.tokens > 0 and first.cost_usd == 0.0
    assert first.learning_rate == 3e-2 and first.seconds > 0


async def test_a_linear_schedule_decays_the_rate_each_step(tiny: str, tmp_path: Path) -> None:
    _, steps = await fit(lora(), tiny, tmp_path, epochs=2, lr_schedule="linear")
    assert [m.learning_rate for m in steps] == pytest.approx([3e-2, 2.25e-2, 1.5e-2, 7.5e-3])


async def test_a_kl_penalty_holds_the_model_near_its_base(tiny: str, tmp_path: Path) -> None:
    _, free = await fit(lora(), tiny, tmp_path / "free", epochs=4)
    _, held = await fit(lora(), tiny, tmp_path / "held", epochs=4, kl=5.0)
    assert free[0].loss == pytest.approx(held[0].loss)  # the same start: the penalty is 0 at the base
    last = [s.loss for s in (free[-1], held[-1])]
    assert last[1] is not None and last[0] is not None and last[1] > 1.5 * last[0], last


async def test_the_adapter_is_the_checkpoint_the_local_harness_samples(tiny: str, tmp_path: Path) -> None:
    checkpoint, _ = await fit(lora(), tiny, tmp_path, epochs=10, learning_rate=5e-2)
    adapter = tmp_path / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert checkpoint.model == f"{tiny}+{adapter.resolve()}" and checkpoint.base_model == tiny
    assert checkpoint.state is not None and Path(checkpoint.state).is_dir()

    async def reply(model: str) -> str:
        request = HarnessRequest(
            run_id="r", machine="m", instructions="Answer briefly.", input="hello 9", model=model,
            tools=[], tool_context=ToolContext(run_id="r"), budget=Budget(0.01), temperature=0.0,
        )  # fmt: skip
        result = await LocalHarness(max_new_tokens=12).run(request)
        return result.output

    before, after = await reply(tiny), await reply(checkpoint.model)
    assert after != before
    assert await reply(f"local:{adapter}") == after  # the adapter alone names its base


async def test_a_resumed_training_ends_with_the_weights_of_one_never_stopped(
    tiny: str, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    whole, _ = await fit(lora(save_every=2), tiny, tmp_path / "whole")

    def stop_at_three(metrics: StepMetrics) -> None:
        if metrics.step == 3:
            raise KeyboardInterrupt

    trainer = lora(save_every=2)
    chosen = settings(tiny)
    prepared = trainer.prepare(examples(), chosen)
    with pytest.raises(KeyboardInterrupt):
        await trainer.train(
            prepared, chosen, folder=tmp_path / "cut", budget=Budget(0.0), on_step=stop_at_three
        )
    state = tmp_path / "cut" / "states" / "step-2"
    assert (state / "optimizer.pt").is_file()
    saved = Checkpoint(model=f"{tiny}+{state}", base_model=tiny, step=2, state=str(state))
    resumed, steps = await fit(trainer, tiny, tmp_path / "cut", resume=saved)
    assert [m.step for m in steps] == [3, 4, 5, 6, 7, 8] and resumed.step == whole.step == 8
    one = load_file(str(tmp_path / "whole" / "adapter" / "adapter_model.safetensors"))
    two = load_file(str(tmp_path / "cut" / "adapter" / "adapter_model.safetensors"))
    assert one.keys() == two.keys() and all(bool((one[k] == two[k]).all()) for k in one)


async def test_a_training_stopped_from_outside_saves_its_state_first_and_resumes_to_the_same_weights(
    tiny: str, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    whole, _ = await fit(lora(), tiny, tmp_path / "whole")

    def ctrl_c_at_three(metrics: StepMetrics) -> None:
        if metrics.step == 3:
            raise KeyboardInterrupt

    trainer, chosen, told = lora(), settings(tiny), []  # no periodic saves: only the one on the way out
    prepared = trainer.prepare(examples(), chosen)
    with pytest.raises(KeyboardInterrupt):
        await trainer.train(
            prepared, chosen, folder=tmp_path / "cut", budget=Budget(0.0), on_step=ctrl_c_at_three,
            on_saved=told.append,
        )  # fmt: skip
    [saved] = told
    assert saved.step == 3 and (tmp_path / "cut" / "states" / "step-3" / "optimizer.pt").is_file()
    resumed, steps = await fit(trainer, tiny, tmp_path / "cut", resume=saved)
    assert [m.step for m in steps] == [4, 5, 6, 7, 8] and resumed.step == whole.step == 8
    one = load_file(str(tmp_path / "whole" / "adapter" / "adapter_model.safetensors"))
    two = load_file(str(tmp_path / "cut" / "adapter" / "adapter_model.safetensors"))
    assert one.keys() == two.keys() and all(bool((one[k] == two[k]).all()) for k in one)


class HeldAtThree(LocalTrainer):
    """Holds step 3 in its thread until ``release`` is set, having set ``entered``."""

    entered = threading.Event()
    release = threading.Event()

    def _step(self, session: Any, batch: Any, *rest: Any) -> StepMetrics:
        if batch.number == 3:
            self.entered.set()
            self.release.wait(60)
        return super()._step(session, batch, *rest)


async def test_a_stop_while_a_step_is_in_its_thread_waits_for_it_then_tells_and_saves_that_step(
    tiny: str, tmp_path: Path
) -> None:
    trainer, chosen = HeldAtThree(rank=8, target_modules=TINY), settings(tiny)
    steps: list[StepMetrics] = []
    told: list[Checkpoint] = []
    prepared = trainer.prepare(examples(), chosen)
    training = asyncio.ensure_future(
        trainer.train(
            prepared, chosen, folder=tmp_path, budget=Budget(0.0), on_step=steps.append, on_saved=told.append
        )
    )
    assert await anyio.to_thread.run_sync(trainer.entered.wait, 60)
    training.cancel()  # as the event loop's Ctrl-C handler does: the step's thread goes on
    await asyncio.sleep(0.2)
    assert not training.done()  # it waits for the step in flight
    trainer.release.set()
    with pytest.raises(asyncio.CancelledError):
        await training
    [saved] = told
    assert [m.step for m in steps] == [1, 2, 3] and saved.step == 3
    state = json.loads((tmp_path / "states" / "step-3" / STATE_FILE).read_text())
    assert state["step"] == 3  # the state holds the steps its checkpoint names


async def test_a_checkpoint_without_a_state_or_past_the_end_is_refused(tiny: str, tmp_path: Path) -> None:
    trainer = lora(rank=4)
    with pytest.raises(BadInputError, match="no training state"):
        await fit(trainer, tiny, tmp_path, resume=Checkpoint(model="x", base_model=tiny, step=1))
    with pytest.raises(BadInputError, match="this training has 8 steps"):
        await fit(trainer, tiny, tmp_path, resume=Checkpoint(model="x", base_model=tiny, step=9, state="s"))


def test_the_lora_shape_comes_from_the_settings_then_the_trainer() -> None:
    base = settings("local:x")
    assert LocalTrainer().lora(base).rank == 16 and LocalTrainer().lora(base).alpha == 32
    assert LocalTrainer(rank=4, alpha=4).lora(base).alpha == 4
    assert LocalTrainer(rank=4).lora(base.model_copy(update={"rank": 8})).rank == 8
    assert LocalTrainer().lora(base).target_modules == ("q_proj", "k_proj", "v_proj", "o_proj")
    shaped = base.model_copy(update={"lora_alpha": 3, "lora_dropout": 0.0, "target_modules": ["v_proj"]})
    assert LocalTrainer(alpha=9, dropout=0.2).lora(shaped) == Lora(16, 3, ("v_proj",), 0.0)


async def test_the_settings_shape_the_adapter_it_saves(tiny: str, tmp_path: Path) -> None:
    import json

    shape = {"lora_alpha": 4, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    await fit(make_trainer(None, tiny), tiny, tmp_path, epochs=1, rank=2, **shape)  # type: ignore[arg-type]
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text(encoding="utf-8"))
    assert (config["r"], config["lora_alpha"], config["lora_dropout"]) == (2, 4, 0.0)
    assert sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    with pytest.raises(BadInputError, match=r"target modules qproj are not layers of .*: .*q_proj"):
        LocalTrainer().prepare(examples(), settings(tiny, target_modules=["qproj", "v_proj"]))


def test_the_composition_picks_the_local_trainer_for_a_local_model() -> None:
    assert make_trainer(None, "local:smollm2-135m").name == "local"
    assert make_trainer("local", "local:/some/folder").name == "local"
    with pytest.raises(BadInputError, match="trains local models"):
        make_trainer("local", "Qwen/Qwen3-8B")
    with pytest.raises(BadInputError, match="there is no trainer 'nope'"):
        make_trainer("nope", "local:smollm2-135m")


async def test_in_a_workspace_the_checkpoint_is_relative_and_resumes_after_a_move(
    tiny: str, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    folder = root / ".machine" / "training" / "t1"

    def stop_at_three(metrics: StepMetrics) -> None:
        if metrics.step == 3:
            raise KeyboardInterrupt

    trainer = lora(save_every=2, root=root)
    chosen = settings(tiny)
    with pytest.raises(KeyboardInterrupt):
        await trainer.train(
            trainer.prepare(examples(), chosen), chosen, folder=folder, budget=Budget(0.0),
            on_step=stop_at_three,
        )  # fmt: skip
    state = ".machine/training/t1/states/step-2"
    saved = Checkpoint(model=f"{tiny}+{state}", base_model=tiny, step=2, state=state)
    moved = tmp_path / "moved"
    root.rename(moved)
    with pytest.raises(BadInputError, match="no saved training state"):
        await fit(lora(root=root), tiny, folder, resume=saved)  # read from where the workspace was
    resumed, steps = await fit(lora(save_every=2, root=moved), tiny, moved / folder.relative_to(root), saved)
    assert [m.step for m in steps] == [3, 4, 5, 6, 7, 8]
    assert resumed.model == f"{tiny}+.machine/training/t1/adapter" and resumed.state is not None
    assert resumed.state == ".machine/training/t1/states/step-8"
    assert (moved / resumed.state / "optimizer.pt").is_file()


@pytest.mark.parametrize(("count", "size"), [(209, 8), (16, 4), (3, 8), (17, 5)])
def test_an_epochs_batches_differ_in_size_by_one_at_most(count: int, size: int) -> None:
    steps = plan(count, size, 2, seed=0)
    assert len(steps) == 2 * -(-count // size)  # as many steps as batch_size needs
    for epoch in (1, 2):
        batches = [s.indices for s in steps if s.epoch == epoch]
        assert sorted(i for b in batches for i in b) == list(range(count))  # each sequence once
        sizes = {len(b) for b in batches}
        assert max(sizes) - min(sizes) <= 1 and max(sizes) <= size  # never a batch of 1 left over
