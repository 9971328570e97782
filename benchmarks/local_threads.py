"""torch's thread count for local models: the count machine chooses (``MACHINE_LOCAL_THREADS``'s default)
against torch's own default, on an idle machine and on a loaded one, side by side.

Each figure comes from a fresh process (torch fixes some of its threads once per process) running the
bundled SmolLM2-135M: greedy generation through the local harness, one run alone and 4 runs in flight
together (batched), in generated tokens per second; and one LoRA step of the local trainer (8 sequences,
rank 16 on the attention projections), in seconds, the median of two steps after a first, uncounted one.
"Loaded" is the same with a second process spinning on one core the whole time (``while True: pass``),
as another person's work, a test run or a build would. The machine's load average before each figure is
printed beside it: on a shared machine, say what else was running.

    .venv/bin/python benchmarks/local_threads.py [--quick] [--tokens 64] [--limit 900]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODEL = "local:smollm2-135m"
QUESTIONS = [
    "Why is the sky blue?",
    "How do bees make honey?",
    "What makes bread rise?",
    "Why is the sea salty?",
]
TOPICS = ["the sea", "a cat", "bread", "rain", "music", "a tree", "the moon", "coffee"]
SPIN = "while True: pass"


def child(tokens: int) -> dict[str, Any]:
    """In the measuring process: the thread count torch ended up with, generation and a LoRA step."""
    import anyio
    import torch

    from machine.clients.local import _models as _local_models

    started = time.perf_counter()
    _local_models.load(MODEL)
    loaded_s = time.perf_counter() - started
    figures: dict[str, Any] = {"threads": torch.get_num_threads(), "load_s": loaded_s}
    anyio.run(_generate, QUESTIONS[:1], 4)  # warm up
    made, seconds = anyio.run(_generate, QUESTIONS[:1], tokens)
    figures["one_tokens_s"] = made / seconds
    made, seconds = anyio.run(_generate, QUESTIONS, tokens)
    figures["four_tokens_s"] = made / seconds
    figures["step_s"] = _lora_step()
    return figures


async def _generate(questions: list[str], tokens: int) -> tuple[int, float]:
    import anyio

    from machine.budget import Budget
    from machine.clients.local import LocalHarness
    from machine.runs import HarnessRequest, ToolContext

    harness = LocalHarness(max_new_tokens=tokens, temperature=0.0, max_batch=len(questions))
    made: list[int] = []

    async def one(question: str) -> None:
        request = HarnessRequest(
            run_id="bench", machine="bench", instructions="Answer in a few sentences.", input=question,
            model=MODEL, tools=[], tool_context=ToolContext(run_id="bench"), budget=Budget(None),
            temperature=0.0,
        )  # fmt: skip
        made.append((await harness.run(request)).usage.output_tokens)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for question in questions:
            group.start_soon(one, question)
    return sum(made), time.perf_counter() - started


def _lora_step() -> float:
    """The median seconds of steps 2 and 3 of a LoRA training on 24 short examples in batches of 8."""
    import anyio

    from machine.budget import Budget
    from machine.clients.local.trainer import LocalTrainer
    from machine.training import StepMetrics, TrainExample, TrainSettings

    examples = [
        TrainExample(
            messages=[
                {"role": "system", "content": "Answer in a sentence or two, then sign off with: Aye!"},
                {"role": "user", "content": f"Tell me something about {TOPICS[i % len(TOPICS)]}, please."},
                {"role": "assistant", "content": f"Here is a short note on {TOPICS[i % len(TOPICS)]}: it "
                 "is worth a look on any day of the week, in any weather. Aye!"},
            ],
            targets=[2],
            run_id=f"r{i}",
        )
        for i in range(24)
    ]  # fmt: skip
    trainer = LocalTrainer()
    settings = TrainSettings(base_model=MODEL, batch_size=8, epochs=1)
    prepared = trainer.prepare(examples, settings)
    steps: list[StepMetrics] = []
    with tempfile.TemporaryDirectory() as folder:

        async def go() -> None:
            await trainer.train(
                prepared, settings, folder=Path(folder), budget=Budget(None), on_step=steps.append
            )

        anyio.run(go)
    return statistics.median(m.seconds for m in steps[1:])


def measure(threads: int | None, loaded: bool, tokens: int, limit: float) -> dict[str, Any]:
    """The figures of a fresh process at ``threads`` (None: torch's default), with a spinning process
    beside it when ``loaded``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.pop("MACHINE_LOCAL_THREADS", None)
    command = [sys.executable, __file__, "--child", "--tokens", str(tokens)]
    if threads is None:
        command.append("--torch-default")
    else:
        env["MACHINE_LOCAL_THREADS"] = str(threads)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if loaded else None
    load_before = os.getloadavg()[0]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return {"timed_out": limit, "load": load_before}
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load_before}


def torch_default() -> int:
    """The intra-op threads torch starts with on this machine, in a fresh process with no setting."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    probe = "import torch; print(torch.get_num_threads())"
    return int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout)


def _cell(figures: dict[str, Any], key: str, unit: str) -> str:
    if "timed_out" in figures:
        return f"> {figures['timed_out']:.0f} s"
    return f"{figures[key]:.1f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=64, help="tokens a reply may generate")
    parser.add_argument("--quick", action="store_true", help="24 tokens a reply")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds one measuring process may take")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--torch-default", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    tokens = 24 if options.quick else options.tokens
    if options.child:
        if options.torch_default:  # leave torch's count as it chose it
            from machine.clients.local import _threads as _local_threads

            _local_threads.use_threads = lambda: 0  # type: ignore[assignment]
            from machine.clients.local import _models as _local_models

            _local_models.use_threads = _local_threads.use_threads
        print(json.dumps(child(tokens)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from machine.clients.local._threads import chosen_threads, usable_cpus

    chosen, default = chosen_threads(), torch_default()
    print(f"{usable_cpus()} usable CPUs; machine's chosen count {chosen}, torch's default {default}")
    print(f"{'':24} {'threads':>7} {'load':>5} {'1 run':>13} {'4 runs':>13} {'LoRA step':>10}")
    for loaded in (False, True):
        for label, threads in ((f"chosen ({chosen})", chosen), (f"torch default ({default})", None)):
            figures = measure(threads, loaded, tokens, options.limit)
            where = "loaded" if loaded else "idle"
            count = figures.get("threads", default if threads is None else threads)
            one, four = _cell(figures, "one_tokens_s", "tok/s"), _cell(figures, "four_tokens_s", "tok/s")
            print(
                f"{where + ', ' + label:24} {count:>7} {figures['load']:>5.2f} {one:>13} {four:>13} "
                f"{_cell(figures, 'step_s', 's'):>10}",
                flush=True,
            )


if __name__ == "__main__":
    main()
