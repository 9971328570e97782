"""A stored run as one training example: the conversation it had, with its own assistant steps as the
targets, except those whose tool calls all failed."""

from __future__ import annotations

from machine.runs import Redactor, Run, TrainExample
from machine.spec import Machine

from ._export import rows_of
from ._marks import answer_of, answer_only


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


def example_of(
    run: Run, spec: Machine, *, source: Machine | None = None, redactor: Redactor | None = None
) -> TrainExample | None:
    """The run as one training example (its secrets redacted, see ``rows_of``): its own assistant steps
    are the targets, except those whose tool calls all failed; None when no step is left to learn."""
    row = rows_of(run, spec, source=source, redactor=redactor)[0]
    messages = row["messages"]
    system = 1 if messages and messages[0]["role"] == "system" else 0
    start = system + len(run.history)  # the system message and the history come first
    skipped = set() if answer_only(run) else {start + i for i in failed_steps(run)}
    if answer_of(run) is not None:  # the person's answer replaced the last step: it is always learned
        skipped.discard(max(i for i, m in enumerate(messages) if m["role"] == "assistant"))
    targets = [
        i for i in range(start, len(messages)) if messages[i]["role"] == "assistant" and i not in skipped
    ]
    if not targets:
        return None
    return TrainExample(
        messages=messages,
        tools=row["tools"],
        targets=targets,
        run_id=run.id,
        case_id=run.case_id,
        effort=run.effort,
    )
