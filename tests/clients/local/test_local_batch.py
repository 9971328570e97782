"""Concurrent local runs share ``generate`` calls (batched, left-padded), a cancelled run stops its
generation, and a suite's runs are free and seeded from their case and trial through the workspace."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.tiny_model import counting, needs_local_stack, tiny_model_folder

needs_local_stack()

from machine import define_evaluator, define_machine, define_rubric  # noqa: E402
from machine.budget import Budget, price_of  # noqa: E402
from machine.clients import make_harness  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.ops import open_workspace  # noqa: E402
from machine.runs import HarnessRequest, ToolContext, run_seed  # noqa: E402
from machine.spec import Case  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny") / "model", seed=1)
    model = f"local:{folder}"
    _local_models.load(model)
    yield model
    _local_models.forget()


def request(model: str, run_id: str, **options: Any) -> HarnessRequest:
    return HarnessRequest(
        run_id=run_id,
        machine="m",
        instructions="Answer.",
        input=options.pop("input", f"question {run_id}"),
        model=model,
        tools=[],
        tool_context=ToolContext(run_id=run_id),
        budget=Budget(None),
        **options,
    )


async def test_runs_in_flight_together_are_generated_in_one_batch(tiny: str) -> None:
    harness = LocalHarness(max_new_tokens=8, window_s=0.5)
    outputs: dict[int, str] = {}

    async def one(n: int) -> None:
        outputs[n] = (await harness.run(request(tiny, f"r{n}", seed=n, input="x" * (n + 1)))).output

    with counting(_local_models.load(tiny)) as calls:
        async with anyio.create_task_group() as group:
            for n in range(4):
                group.start_soon(one, n)
    assert calls == [4]
    assert sorted(outputs) == [0, 1, 2, 3]


async def test_a_batched_row_keeps_its_own_seed(tiny: str) -> None:
    harness = LocalHarness(max_new_tokens=16, window_s=0.3)
    alone = (await harness.run(request(tiny, "a", seed=5, temperature=1.0))).output
    together: list[str] = []

    async def one(seed: int) -> None:
        result = await harness.run(request(tiny, "a", seed=seed, temperature=1.0))
        if seed == 5:
            together.append(result.output)

    with counting(_local_models.load(tiny)) as calls:
        async with anyio.create_task_group() as group:
            for seed in (5, 6, 7):
                group.start_soon(one, seed)
    assert calls == [3]
    assert together == [alone]


async def test_cancelling_a_run_stops_its_generation(tiny: str) -> None:
    loaded = _local_models.load(tiny)
    harness = LocalHarness(max_new_tokens=1500)
    real = loaded.model.generate
    made: list[int] = []

    def generate(**kwargs: Any) -> Any:
        out = real(**kwargs)
        made.append(out.shape[1] - kwargs["input_ids"].shape[1])
        return out

    loaded.model.generate = generate
    try:
        started = time.monotonic()
        with anyio.move_on_after(0.3):
            await harness.run(request(tiny, "c", temperature=1.0, seed=3))
        for _ in range(200):  # the worker notices within a token; bounded wait for it to finish
            if made:
                break
            await anyio.sleep(0.05)
    finally:
        loaded.model.generate = real
    assert made and made[0] < 1500
    assert time.monotonic() - started < 10


async def test_suite_runs_are_free_under_a_budget_and_seeded_by_case_and_trial(
    tiny: str, tmp_path: Path
) -> None:
    rubric = define_rubric({"any": "Anything."})
    from machine import check

    spec = define_machine(
        name="tiny",
        intent="Say something.",
        instructions="Say something.",
        model=tiny,
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"any": check("any", lambda run: 1.0)}),
    )
    seeds: list[int | None] = []
    harness = LocalHarness(max_new_tokens=6)
    real_run = harness.run

    async def run(req: HarnessRequest) -> Any:
        seeds.append(req.seed)
        return await real_run(req)

    harness.run = run  # type: ignore[method-assign]
    ws = open_workspace(tmp_path, harness=harness, budget=Budget(0.01))
    case = Case(id="c1", input="hello")
    first = await ws.run(spec, "hello", case=case, trial=0)
    again = await ws.run(spec, "hello", case=case, trial=0)
    other = await ws.run(spec, "hello", case=case, trial=1)
    assert seeds == [run_seed("c1", 0), run_seed("c1", 0), run_seed("c1", 1)]
    assert seeds[0] != seeds[2] and run_seed(None, 0) is None
    assert first.output == again.output
    assert (first.status, first.harness, first.cost_usd, ws.budget.spent) == ("ok", "local", 0.0, 0.0)
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert other.status == "ok"


def test_local_models_and_their_training_are_free() -> None:
    assert price_of("local:smollm2-135m") == price_of("train:local:/some/base") == price_of("echo")
    assert price_of("local:smollm2-135m") is not None and price_of("local:x").input == 0.0  # type: ignore[union-attr]


def test_a_local_model_picks_the_local_harness_unless_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_HARNESS", raising=False)
    assert make_harness("local").name == "local"
    assert make_harness(None, model="local:smollm2-135m").name == "local"
    assert make_harness("echo", model="local:smollm2-135m").name == "echo"
    monkeypatch.setenv("MACHINE_HARNESS", "echo")
    assert make_harness(None, model="local:smollm2-135m").name == "echo"
