"""A stored run as one training example: the conversation it had, with its own assistant steps as the
targets, except those whose tool calls all failed (``_targets``): the export's row of the run, its context
turns marked ``"weight": 0``, read as the trainers read it."""

from __future__ import annotations

from machine.runs import Redactor, Run
from machine.spec import Machine
from machine.training import TrainExample

from ._export import rows_of


def example_of(
    run: Run, spec: Machine, *, source: Machine | None = None, redactor: Redactor | None = None
) -> TrainExample | None:
    """The run as one training example (its secrets redacted, see ``rows_of``): the assistant messages
    its exported row does not mark as context are the targets; None when no step is left to learn."""
    row = rows_of(run, spec, source=source, redactor=redactor)[0]
    example = TrainExample(
        messages=row["messages"],
        tools=row["tools"],
        run_id=run.id,
        case_id=run.case_id,
        effort=run.effort,
    )
    return example if example.targets else None
