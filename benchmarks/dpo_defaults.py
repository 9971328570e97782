"""DPO's defaults against the ones that collapsed a model: the local trainer on SmolLM2-135M, 16 preference
pairs (a pirate's reply that ends "Aye!" over a plain one), trained once at the old defaults (SFT's: lr
2e-4, 8 epochs for 32 steps, LoRA dropout 0.05) and once at DPO's (lr 2e-5, 3 epochs for 12 steps, no
dropout), each from the base. Figures, side by side with the base model as the anchor: the last step's
loss and chosen drift (log p of the chosen answers against the reference, summed over their tokens), and
on 9 held-out questions (greedy, 48 tokens) how many replies are degenerate (one word is at least 40% of
the words, or a phrase of 1 to 3 words repeats 4 times running). Target: DPO's defaults leave the
held-out replies as sound as the base's (no more degenerate ones). About 10 minutes on 2 busy CPU cores.

    .venv/bin/python benchmarks/dpo_defaults.py [--quick] [--model local:smollm2-135m]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from machine.budget import Budget
from machine.clients.local import _models as _local_models
from machine.clients.local._chat_format import prompt_text as local_prompt_text
from machine.clients.local.trainer import LocalTrainer
from machine.training import StepMetrics, TrainExample, TrainSettings

SYSTEM = "Answer the question in a sentence or two."
QUESTIONS = [
    "How do I restart my phone when it freezes?", "How does photosynthesis work?",
    "How should I start saving money each month?", "What does git rebase do?",
    "How many hours of sleep does an adult need?", "Any tips for a job interview tomorrow?",
    "Why are there two high tides a day?", "How do I boil an egg so the yolk stays soft?",
    "What is a prime number?", "Why is the sky blue?", "How do vaccines work?", "What is inflation?",
    "How do I water a cactus?", "What causes thunder?", "How do I tie a bowline knot?",
    "What is the capital of Australia?",
]  # fmt: skip
HELD_OUT = [
    "How do I make a cup of tea?", "Why do cats purr?", "What is a black hole?",
    "How do I back up my laptop?", "What is the speed of sound?", "How do bees make honey?",
    "What does a compiler do?", "How can I learn to swim?", "Why do leaves change colour in autumn?",
]  # fmt: skip
CONFIGS = {
    "old (SFT's)": {"learning_rate": 2e-4, "epochs": 8, "lora_dropout": 0.05},
    "DPO's": {},
}


def pairs(count: int) -> list[TrainExample]:
    """A pirate's answer over a plain one, on each question."""
    made = []
    for i, question in enumerate(QUESTIONS[:count]):
        plain = f"Here is a short answer about {question.lower().rstrip('?')}."
        made.append(
            TrainExample(
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": f"Arr, matey! {plain} Aye! Aye!"},
                ],
                targets=[2],
                rejected=[{"role": "assistant", "content": plain}],
                run_id=f"r{i}",
            )
        )
    return made


def degenerate(text: str) -> bool:
    words = re.findall(r"[\w']+", text.lower())
    if len(words) < 4:
        return False
    if Counter(words).most_common(1)[0][1] >= 0.4 * len(words):
        return True
    return any(re.search(rf"((?:\b[\w']+\W+){{{n}}})\1{{3}}", text.lower() + " ") for n in (1, 2, 3))


def replies(model: str, questions: list[str], tokens: int) -> list[str]:
    """Greedy replies of ``model`` to each question, prompted as the local harness prompts it."""
    import torch

    loaded = _local_models.load(model)
    tokenizer = loaded.tokenizer
    said = []
    for question in questions:
        text = local_prompt_text(
            tokenizer, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}], []
        )
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"].to(loaded.device)
        with torch.no_grad():
            out = loaded.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=tokens,
                do_sample=False,
                eos_token_id=loaded.stop_ids,
                pad_token_id=loaded.pad_id,
            )
        said.append(str(tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)).strip())
    return said


def trained(
    base: str, changes: dict[str, Any], data: list[TrainExample], folder: Path
) -> tuple[str, list[StepMetrics], float]:
    made: dict[str, Any] = {"method": "dpo", "beta": 0.1, "batch_size": 4, "epochs": 3, **changes}
    settings = TrainSettings(base_model=base, **made)
    trainer = LocalTrainer()
    prepared = trainer.prepare(data, settings)
    steps: list[StepMetrics] = []
    started = time.monotonic()

    async def go() -> str:
        checkpoint = await trainer.train(
            prepared, settings, folder=folder, budget=Budget(None), on_step=steps.append
        )
        return checkpoint.model

    model = anyio.run(go)
    return model, steps, time.monotonic() - started


def row(name: str, said: list[str], steps: list[StepMetrics] | None, seconds: float | None) -> str:
    bad = sum(degenerate(s) for s in said)
    if not steps:
        return f"  {name:<12} {'-':>5} {'-':>8} {'-':>8} {'-':>7}   {bad}/{len(said)}"
    last = steps[-1]
    return (
        f"  {name:<12} {len(steps):>5} {last.loss or 0:>8.4f} {last.chosen_drift or 0:>+8.2f} "
        f"{seconds or 0:>6.0f}s   {bad}/{len(said)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:smollm2-135m")
    parser.add_argument("--quick", action="store_true", help="8 pairs, 4 held-out questions, 32 tokens")
    args = parser.parse_args()
    count, held, tokens = (8, 4, 32) if args.quick else (16, len(HELD_OUT), 48)
    data = pairs(count)
    lines = ["  config       steps     loss    drift    time   degenerate"]
    lines.append(row("base", replies(args.model, HELD_OUT[:held], tokens), None, None))
    for name, changes in CONFIGS.items():
        with tempfile.TemporaryDirectory() as folder:
            model, steps, seconds = trained(args.model, changes, data, Path(folder))
            lines.append(row(name, replies(model, HELD_OUT[:held], tokens), steps, seconds))
            for question, reply in zip(HELD_OUT[:2], replies(model, HELD_OUT[:2], tokens), strict=True):
                print(f"{name}: {question} -> {reply[:100]!r}")
    print(
        f"DPO on {args.model}, {count} pairs, {held} held-out questions "
        "(target: DPO's no more degenerate than the base)"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
