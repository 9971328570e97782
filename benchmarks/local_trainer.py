"""Training speed of the local trainer against TRL's ``SFTTrainer`` with the same LoRA on the same examples.

Both train the same sequences (the local trainer's own rendering: ids and labels, loss on the replies only)
with LoRA of the same rank, alpha, dropout and target modules, AdamW at the same learning rate, the same
batch size, for the same steps, on the same device. The figure is training tokens (every token of every
sequence) per second of optimizer steps; the model's load and the first (warm-up) step are counted in
neither. Target: the local trainer at least 0.9x TRL. TRL is not installed by ``make test``: install it for
this benchmark with ``pip install -c .venv/torch-constraint.txt 'machine[bench]'`` (or ``pip install trl``).

    .venv/bin/python benchmarks/local_trainer.py [--quick] [--model local:smollm2-135m] [--steps 6]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from machine.budget import Budget
from machine.clients.local import _models as _local_models
from machine.clients.local._train_data import TrainSequence
from machine.clients.local.trainer import LocalTrainer
from machine.training import StepMetrics, TrainExample, TrainSettings

TOPICS = ["the sea", "a cat", "bread", "rain", "music", "a tree", "the moon", "coffee", "snow", "a book"]


def examples(count: int) -> list[TrainExample]:
    return [
        TrainExample(
            messages=[
                {"role": "system", "content": "Answer in a sentence or two, then sign off with: Aye!"},
                {"role": "user", "content": f"Tell me something about {TOPICS[i % len(TOPICS)]}."},
                {"role": "assistant", "content": f"Here is a short note on {TOPICS[i % len(TOPICS)]}. Aye!"},
            ],
            targets=[2],
            run_id=f"r{i}",
        )
        for i in range(count)
    ]


def ours(model: str, settings: TrainSettings, trainer: LocalTrainer, data: list[TrainExample]) -> float:
    """Tokens per second of the local trainer, its first step left out."""
    prepared = trainer.prepare(data, settings)
    steps: list[StepMetrics] = []
    with tempfile.TemporaryDirectory() as folder:

        async def go() -> None:
            await trainer.train(
                prepared, settings, folder=Path(folder), budget=Budget(None), on_step=steps.append
            )

        anyio.run(go)
    timed = steps[1:]
    return sum(m.tokens for m in timed) / sum(m.seconds for m in timed)


def trl(model: str, settings: TrainSettings, trainer: LocalTrainer, sequences: list[TrainSequence]) -> float:
    """Tokens per second of TRL's SFTTrainer on the same sequences (ids and completion mask given)."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    loaded = _local_models.load(model)
    lora = trainer.lora(settings)
    rows = [
        {
            "input_ids": s.input_ids,
            "labels": list(s.labels),
            "completion_mask": [int(label != -100) for label in s.labels],
        }
        for s in sequences
    ]
    times: list[tuple[float, int]] = []

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.started = time.monotonic()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            times.append((time.monotonic() - self.started, 0))

    with tempfile.TemporaryDirectory() as folder:
        config = SFTConfig(
            output_dir=folder, per_device_train_batch_size=settings.batch_size, gradient_accumulation_steps=1,
            learning_rate=settings.learning_rate or 2e-4, num_train_epochs=settings.epochs,
            lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0,
            logging_steps=1, save_strategy="no", report_to=[], completion_only_loss=True,
            dataset_kwargs={"skip_prepare_dataset": True}, remove_unused_columns=False, seed=settings.seed,
            use_cpu=loaded.device == "cpu", dataloader_num_workers=0,
        )  # fmt: skip
        sft = SFTTrainer(
            model=copy.deepcopy(loaded.model), args=config, train_dataset=Dataset.from_list(rows),
            processing_class=loaded.tokenizer, peft_config=lora.config(), callbacks=[Clock()],
        )  # fmt: skip
        sft.train()
    per_step = settings.batch_size
    order_tokens = [len(s.input_ids) for s in sequences]
    batches = [
        order_tokens[i : i + per_step] for i in range(0, len(order_tokens), per_step)
    ] * settings.epochs
    timed = times[1:]
    tokens = sum(sum(b) for b in batches[1 : len(times)])
    return tokens / sum(t for t, _ in timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:smollm2-135m")
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    steps = 3 if args.quick else args.steps
    batch = 4
    data = examples(steps * batch)
    settings = TrainSettings(base_model=args.model, epochs=1, batch_size=batch, learning_rate=2e-4)
    trainer = LocalTrainer(rank=8)
    started = time.monotonic()
    prepared = trainer.prepare(data, settings)
    took = time.monotonic() - started
    print(
        f"model {args.model} loaded, {prepared.sequences} sequences, {prepared.tokens} tokens: {took:.1f} s"
    )
    mine = ours(args.model, settings, trainer, data)
    try:
        theirs: float | None = trl(args.model, settings, trainer, list(prepared.data))
    except ImportError as missing:
        print(f"TRL is not installed ({missing}): pip install -c .venv/torch-constraint.txt 'machine[bench]'")
        theirs = None
    print(f"{'trainer':<28}{'tokens/s':>10}{'ratio':>8}   target")
    if theirs is not None:
        print(f"{'TRL SFTTrainer (LoRA)':<28}{theirs:>10.1f}{1.0:>8.2f}   baseline")
    ratio = "" if theirs is None else f"{mine / theirs:.2f}"
    print(f"{'LocalTrainer (LoRA)':<28}{mine:>10.1f}{ratio:>8}   >= 0.90x TRL")


if __name__ == "__main__":
    main()
