"""Preference pairs from the changes a person was asked about (``--edits ask``): where they declined a change
a tool proposed and later, in the same run, approved another change to the same file (or the same
command's place: the next approved command), the approved turn is chosen over the declined one, on the
conversation as it stood before the declined turn. A refusal by policy (``--edits deny``, nobody to ask)
says nothing of the change and makes no pair."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from machine.runs import EditRecord, Message, Run, to_openai

PEOPLE = frozenset({"terminal", "elicitation", "sdk"})
"""Who answered as the person (an earlier "all" and a policy did not look at the change)."""


@dataclass(frozen=True)
class EditPair:
    """A declined change's turn (rejected) and the turn whose change to the same place was approved
    after it (chosen), on the conversation before the declined turn."""

    run: Run
    before: list[Message]
    rejected: Message
    chosen: Message

    def row(self, machine: str) -> dict[str, Any]:
        """The pair as a line of ``export --pairs`` (``kind`` ``edit``)."""
        return {
            "prompt": to_openai(self.run.instructions, self.before, send_reasoning=False),
            "chosen": to_openai("", [self.chosen], send_reasoning=False),
            "rejected": to_openai("", [self.rejected], send_reasoning=False),
            "metadata": {
                "kind": "edit",
                "machine": machine,
                "case_id": self.run.case_id,
                "chosen_run_id": self.run.id,
                "rejected_run_id": self.run.id,
            },
        }


def _place(edit: EditRecord) -> str:
    return f"path:{edit.path}" if edit.command is None else "command"


def _decisions(said: list[Message]) -> Iterator[tuple[int, EditRecord]]:
    """Each change a person decided on, with the index of the assistant turn that proposed it."""
    turn_of: dict[str, int] = {}
    for index, message in enumerate(said):
        for call in message.tool_calls:
            turn_of[call.id] = index
        if message.role == "tool" and message.tool_call_id in turn_of:
            for edit in message.edits:
                if edit.by in PEOPLE:
                    yield turn_of[message.tool_call_id], edit


def edit_pairs(run: Run) -> Iterator[EditPair]:
    """The run's pairs: each declined change with the next approved change to the same place."""
    said = [*run.history, *run.trajectory]
    declined: dict[str, int] = {}
    for turn, edit in _decisions(said):
        place = _place(edit)
        if edit.decision == "declined":
            declined.setdefault(place, turn)
        elif place in declined and turn != declined[place]:
            rejected = declined.pop(place)
            yield EditPair(run, said[:rejected], said[rejected], said[turn])


__all__ = ["EditPair", "edit_pairs"]
