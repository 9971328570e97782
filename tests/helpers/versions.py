"""A machine to propose, commit and revert: ``caps`` answers in capital letters, through a harness whose
reply depends on the MODEL, so which candidate wins, and by how much, is known exactly."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop

CASES = [{"id": c, "input": c} for c in ("ann", "bob", "cat", "dan", "eve", "fay", "gus")]
"""Seven held-out cases: a model right on six or seven of them is enough evidence for the gate (which
needs six cases that changed at min_z 2)."""


class ByModel:
    """A model named ``good...`` answers every case correctly, ``mostly...`` all but ``dan``, anything
    else none; it counts its calls by model."""

    name = "bymodel"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def run(self, request: HarnessRequest) -> HarnessResult:
        self.calls[request.model] += 1
        right = request.model.startswith("good") or (
            request.model.startswith("mostly") and request.input != "dan"
        )
        text = request.input.upper() if right else "no idea"

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text))

        return await run_loop(request, reply)


def make_caps(
    root: Path, machine_py: str, rubric_py: str, instructions: bytes = b"Shout the input.\n"
) -> Path:
    """The machine's folder under ``root/machines/caps``, with its held-out cases."""
    folder = root / "machines" / "caps"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(machine_py, encoding="utf-8")
    (folder / "rubric.py").write_text(rubric_py, encoding="utf-8")
    (folder / "instructions.md").write_bytes(instructions)
    (folder / "holdout.json").write_text(json.dumps(CASES), encoding="utf-8")
    return folder


CAPS_RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"correct": "The reply is the input in capital letters."})
"""

CAPS_MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric

machine = define_machine(
    name="caps",
    intent="Repeat the input in capital letters.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "bad"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"correct": check("caps", lambda r: r.output == r.input.upper())}),
)
"""
