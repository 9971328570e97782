"""Which assistant messages of a run's example are learned (its targets) and which are context: the run's
own steps are targets, except those whose tool calls all failed; everything its conversation said before
it (the history, a reply the person may have marked bad among it) is context. The export writes the
context turns with ``"weight": 0``, as OpenAI's chat fine-tuning format allows, and every trainer reads
the same mark, so what is learned is what the person approved, whoever trains."""

from __future__ import annotations

from typing import Any

from machine.runs import Run

from ._marks import answer_of, answer_only

CONTEXT = {"weight": 0}
"""The mark of an assistant message that is context, not a target."""


def failed_steps(run: Run) -> set[int]:
    """The trajectory indices of the assistant messages whose tool calls all failed."""
    failed = set()
    messages = run.trajectory
    for index, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        ids = {c.id for c in message.tool_calls}
        results = [m for m in messages[index + 1 :] if m.role == "tool" and m.tool_call_id in ids]
        if results and all(m.is_error for m in results):
            failed.add(index)
    return failed


def target_steps(run: Run, wire: list[dict[str, Any]]) -> list[int]:
    """The indices in ``wire`` (the run's chat messages as the export writes them: the system message,
    the history, then the run as marked) of the assistant messages to learn."""
    system = 1 if wire and wire[0]["role"] == "system" else 0
    start = system + len(run.history)  # the system message and the history come first
    skipped = set() if answer_only(run) else {start + i for i in failed_steps(run)}
    if answer_of(run) is not None:  # the person's answer replaced the last step: it is always learned
        skipped.discard(max(i for i, m in enumerate(wire) if m["role"] == "assistant"))
    return [i for i in range(start, len(wire)) if wire[i]["role"] == "assistant" and i not in skipped]


def weighted(wire: list[dict[str, Any]], targets: list[int]) -> list[dict[str, Any]]:
    """``wire`` with every assistant message that is not one of ``targets`` marked as context."""
    learned = set(targets)
    return [
        {**m, **CONTEXT} if m["role"] == "assistant" and i not in learned else m for i, m in enumerate(wire)
    ]
