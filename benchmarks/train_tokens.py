"""Training tokens for one tool-using run of 6 steps on Inkling: trained whole (one sequence, every step
a target) against trained per step (one sequence per step, each with the context before it).

The run is built as the chat harness records it: a question, five tool calls (each with its reasoning and
a tool result of about 300 characters), then the answer; exported with ``example_of`` and rendered by the
Tinker trainer's ``prepare`` with Inkling's renderer (tml_v0 at effort 0.9, offline). The run's own tokens
are its whole rendering (everything up to the answer). The whole-run figure is what ``prepare`` sends
(the Datum's input, one token shorter); the per-step figure is what one sequence per step would send.

Target: whole-run training tokens <= 1.1x the run's own tokens. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/train_tokens.py [--steps 6]
"""

from __future__ import annotations

import argparse
import logging
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from machine import check, define_evaluator, define_machine, define_rubric, tool
from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._render import _last_step, conversation, rendering_for
from machine.learn.train import example_of
from machine.runs import Message, Run, ToolCall
from machine.training import TrainSettings

INKLING = "thinkingmachines/Inkling"
TARGET = 1.1


@tool
def read_page(url: str) -> str:
    """Read a web page."""
    return url


def run_of(steps: int) -> Run:
    """A run of ``steps`` assistant steps: ``steps - 1`` tool calls, then the answer."""
    trajectory = [Message(role="user", content="Summarise what these pages say about tide tables.")]
    for n in range(steps - 1):
        trajectory += [
            Message(
                role="assistant",
                reasoning=f"Page {n} may list the tide times; read it before answering.",
                tool_calls=[ToolCall(id=f"c{n}", name="read_page", arguments={"url": f"https://x.test/{n}"})],
            ),
            Message(role="tool", tool_call_id=f"c{n}", content=f"Page {n}: high tide at 06:{n:02d}. " * 12),
        ]
    trajectory.append(
        Message(role="assistant", reasoning="Every page agrees.", content="High tide is just after 06:00.")
    )
    return Run(
        machine="tides",
        model=INKLING,
        harness="chat",
        instructions="Answer from the pages you read.",
        input=trajectory[0].content,
        trajectory=trajectory,
        output=trajectory[-1].content,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rubric = define_rubric({"right": "Right."})
    spec = define_machine(
        name="tides",
        intent="Read pages.",
        instructions="Answer from the pages you read.",
        model=INKLING,
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"right": check("right", lambda run: True)}),
        tools=[read_page],
    )
    example = example_of(run_of(args.steps), spec)
    assert example is not None
    started = time.perf_counter()
    rendering = rendering_for(INKLING, None)
    loaded = time.perf_counter() - started
    trainer, settings = TinkerTrainer(rendering=rendering), TrainSettings(base_model=INKLING)
    started = time.perf_counter()
    trainer.prepare([example], settings)  # the first render warms the renderer up
    first = time.perf_counter() - started
    started = time.perf_counter()
    prepared = trainer.prepare([example], settings)
    took = time.perf_counter() - started
    conv, targets = conversation(example, rendering.renderer)
    steps = [_last_step(rendering, conv, end) for end in targets]
    own = len(steps[-1].model_input.to_ints())  # the last step's context is the whole run
    per_step = sum(len(s.model_input.to_ints()) - 1 for s in steps)
    print(f"run: {len(targets)} steps ({len(targets) - 1} tool calls), {own} tokens rendered", end=" ")
    print(f"({prepared.renderer}, effort {prepared.effort})")
    print(f"whole run ({prepared.sequences} sequence): {prepared.tokens} training tokens")
    print(f"per step ({len(steps)} sequences): {per_step} training tokens")
    print(f"{'':24}{'figure':>10}{'target':>10}")
    print(f"{'whole / own tokens':24}{prepared.tokens / own:>9.2f}x{'<= ' + str(TARGET) + 'x':>10}")
    print(f"{'per step / own tokens':24}{per_step / own:>9.2f}x{'':>10}")
    print(f"{'per step / whole':24}{per_step / prepared.tokens:>9.2f}x{'':>10}")
    print(f"target tokens: {prepared.target_tokens} of {prepared.tokens}")
    print(
        f"(renderer and tokenizer loaded in {loaded:.1f} s; prepare: {first:.2f} s the first time,", end=" "
    )
    print(f"then {took * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
