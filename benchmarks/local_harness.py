"""Generation speed of the local harness against a plain ``model.generate`` on the same prompts.

Three figures, in generated tokens per second, greedy, the same model and prompts (rendered the one way
the harness renders them): plain ``model.generate`` one prompt after another; the harness one run after
another (target: at least 0.9x plain); the harness with 8 runs in flight together, which it batches
(target: at least 2x plain, one after another).

    .venv/bin/python benchmarks/local_harness.py [--quick] [--model local:smollm2-135m] [--tokens 64]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from machine.budget import Budget
from machine.clients.local import LocalHarness
from machine.clients.local import _models as _local_models
from machine.clients.local._chat_format import prompt_text as local_prompt_text
from machine.runs import HarnessRequest, ToolContext, to_openai

INSTRUCTIONS = "You are a helpful assistant. Answer in a few sentences."
QUESTIONS = [
    "Why is the sky blue?",
    "How do bees make honey?",
    "What is a prime number?",
    "Why do we have seasons?",
    "How does a bicycle stay upright?",
    "What makes bread rise?",
    "Why is the sea salty?",
    "How do plants drink water?",
]


def request(model: str, question: str, tokens: int) -> HarnessRequest:
    return HarnessRequest(
        run_id="bench",
        machine="bench",
        instructions=INSTRUCTIONS,
        input=question,
        model=model,
        tools=[],
        tool_context=ToolContext(run_id="bench"),
        budget=Budget(None),
        temperature=0.0,
    )


def plain(model: str, questions: list[str], tokens: int) -> tuple[int, float]:
    """Tokens generated and seconds taken by ``model.generate``, one prompt after another."""
    import torch

    loaded = _local_models.load(model)
    made, started = 0, time.perf_counter()
    for question in questions:
        wire = to_openai(INSTRUCTIONS, [_user(question)], send_reasoning=False)
        ids = loaded.tokenizer(local_prompt_text(loaded.tokenizer, wire), add_special_tokens=False)[
            "input_ids"
        ]
        with torch.inference_mode():
            out = loaded.model.generate(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=tokens,
                do_sample=False,
                eos_token_id=loaded.stop_ids,
                pad_token_id=loaded.pad_id,
            )
        new = out[0, len(ids) :].tolist()
        end = next((i for i, t in enumerate(new) if t in loaded.stop_ids), None)
        made += len(new) if end is None else end + 1
    return made, time.perf_counter() - started


def _user(text: str) -> object:
    from machine.runs import Message

    return Message(role="user", content=text)


async def harness(model: str, questions: list[str], tokens: int, together: bool) -> tuple[int, float]:
    """Tokens generated and seconds taken by the harness: one run after another, or all in flight."""
    runner = LocalHarness(max_new_tokens=tokens, temperature=0.0, max_batch=len(questions))
    made: list[int] = []

    async def one(question: str) -> None:
        result = await runner.run(request(model, question, tokens))
        made.append(result.usage.output_tokens)

    started = time.perf_counter()
    if together:
        async with anyio.create_task_group() as group:
            for question in questions:
                group.start_soon(one, question)
    else:
        for question in questions:
            await one(question)
    return sum(made), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="local:smollm2-135m")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="24 tokens per reply")
    options = parser.parse_args()
    tokens = 24 if options.quick else options.tokens
    started = time.perf_counter()
    _local_models.load(options.model)
    print(f"loaded {options.model} in {time.perf_counter() - started:.1f} s")
    plain(options.model, QUESTIONS[:1], 4)  # warm up both paths
    anyio.run(harness, options.model, QUESTIONS[:1], 4, False)
    base_tokens, base_s = plain(options.model, QUESTIONS, tokens)
    one_tokens, one_s = anyio.run(harness, options.model, QUESTIONS, tokens, False)
    many_tokens, many_s = anyio.run(harness, options.model, QUESTIONS, tokens, True)
    base = base_tokens / base_s
    print(f"{'':34} {'tokens':>7} {'seconds':>8} {'tokens/s':>9} {'vs plain':>9} {'target':>8}")
    rows = [
        ("plain model.generate, one by one", base_tokens, base_s, None),
        ("harness, one run after another", one_tokens, one_s, 0.9),
        (f"harness, {len(QUESTIONS)} runs in flight", many_tokens, many_s, 2.0),
    ]
    for label, made, seconds, target in rows:
        rate = made / seconds
        ratio = "" if target is None else f"{rate / base:.2f}x"
        goal = "" if target is None else f">= {target}x"
        print(f"{label:34} {made:>7} {seconds:>8.2f} {rate:>9.1f} {ratio:>9} {goal:>8}")


if __name__ == "__main__":
    main()
