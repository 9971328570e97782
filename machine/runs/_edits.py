"""Approval of changes to a person's own files. A run working in a project (``machine run`` started inside
it) changes real files: in ``ask`` mode each change a tool would make (a file written or edited, a
command run) is first shown to the person as what it is (a unified diff, a command line) and made only
after their yes; ``deny`` refuses every change, ``auto`` makes them unasked (as in a fresh sandbox, where
nothing real is touched). The run keeps each proposal and its answer on the tool's result, so a declined
change is seen in ``show-run``, the dashboard and the data learned from.

The question is the program's own, drawn from the tool call; nothing a model wrote is ever an answer.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from ._inert import inert
from ._records import EditRecord

EditMode = Literal["ask", "auto", "deny"]
EDIT_MODES: tuple[EditMode, ...] = ("ask", "auto", "deny")
Choice = Literal["yes", "no", "all", "quit"]
DIFF_CHARS = 20_000
"""The most of a proposal's diff a run keeps (the person was shown it whole)."""
DECLINED = "the person declined this change; nothing was written"
"""What the model is told of a change the person said no to (it may propose another)."""
STOPPED = "the person stopped the run here; nothing was written"
UNANSWERED = (
    "nobody answered in time whether to make this change, so the run stopped here; nothing was written"
)
MATCHED_LINES = 4_000_000
"""The most lines before times lines after that difflib matches; a larger change is shown whole."""


@dataclass(frozen=True)
class EditProposal:
    """A change a tool would make: a file written (``before`` None: a new file; ``after`` None: the file
    deleted) or a command run (``command``), with the unified diff the person is shown."""

    tool: str
    path: str | None = None
    before: str | None = None
    after: str | None = None
    command: str | None = None

    @property
    def action(self) -> str:
        """What the change would do, in words, its path made inert: ``run a command``, ``delete PATH``,
        ``create PATH`` or ``change PATH``: what every face asks about."""
        if self.command is not None:
            return "run a command"
        path = inert(self.path or "?")
        if self.after is None:
            return f"delete {path}"
        return f"{'create' if self.before is None else 'change'} {path}"

    @cached_property
    def diff(self) -> str:
        """The change as a unified diff against the path relative to the project (a new file whole, a
        deleted one named), or the command line."""
        if self.command is not None:
            return f"$ {self.command}"
        name = self.path or "?"
        if self.after is None:
            return f"delete {name}"
        before = [] if self.before is None else self.before.splitlines(keepends=True)
        after = self.after.splitlines(keepends=True)
        old = "/dev/null" if self.before is None else f"a/{name}"
        ending = "\n\\ No newline at end of file\n"
        lines = _diff_lines(before, after, old, f"b/{name}")
        return (
            "".join(line if line.endswith("\n") else line + ending for line in lines)
            or f"(no change to {name})"
        )


def _diff_lines(before: list[str], after: list[str], old: str, new: str) -> list[str]:
    """A unified diff; where the lines that differ are too many for difflib's matching (a model may
    propose any file), the lines between the common start and end are shown replaced whole: still
    exactly the change, in one hunk."""
    if len(before) * len(after) <= MATCHED_LINES:
        return list(difflib.unified_diff(before, after, fromfile=old, tofile=new))
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    gone, come = before[start : len(before) - end], after[start : len(after) - end]
    head = f"@@ -{start + 1},{len(gone)} +{start + 1},{len(come)} @@\n"
    return [f"--- {old}\n", f"+++ {new}\n", head, *("-" + g for g in gone), *("+" + c for c in come)]


@dataclass(frozen=True)
class EditAnswer:
    """The person's answer to one proposal, and how it was given (``terminal``, ``elicitation``; a
    program's own callback, ``sdk``, unless it says otherwise)."""

    choice: Choice
    by: str = "sdk"


ApproveEdit = Callable[[EditProposal], Awaitable[EditAnswer]]
"""Who is asked about each change in ``ask`` mode."""


@dataclass(eq=False)
class EditGate:
    """One run's gate on changes to the person's files: asks (or refuses) each change and keeps what was
    decided until the loop takes it onto the tool's result."""

    mode: EditMode
    approve: ApproveEdit | None = None
    approved_all: bool = False
    stopped: bool = False
    decided: list[EditRecord] = field(default_factory=list)

    async def refusal(self, proposal: EditProposal) -> str | None:
        """None when the change may be made; else what the model is told (nothing was written)."""
        if self.mode == "auto":
            return None
        choice, by = await self._answer(proposal)
        shown = proposal.diff
        self.decided.append(
            EditRecord(
                tool=proposal.tool,
                path=proposal.path,
                command=proposal.command,
                diff=shown if len(shown) <= DIFF_CHARS else shown[:DIFF_CHARS] + "\n… (cut)",
                decision="approved" if choice in ("yes", "all") else "declined",
                by=by,
            )
        )
        if choice == "quit":
            self.stopped = True
            return UNANSWERED if by == "timeout" else STOPPED
        if choice == "no":
            return DECLINED if by != "policy" else self._refusal()
        self.approved_all = self.approved_all or choice == "all"
        return None

    async def _answer(self, proposal: EditProposal) -> tuple[Choice, str]:
        if self.stopped:
            return "quit", "policy"
        if self.mode == "deny" or self.approve is None:
            return "no", "policy"
        if self.approved_all:
            return "yes", "all"
        answer = await self.approve(proposal)
        return answer.choice, answer.by

    def _refusal(self) -> str:
        if self.mode == "deny":
            return "the person refuses every change to their files in this run; nothing was written"
        return (
            "changes to the person's files need their yes, and nobody can be asked here; nothing was "
            "written (the person may allow changes unasked where they start the machine)"
        )

    def take(self) -> list[EditRecord]:
        """What was decided since the last take (the loop keeps it on the tool's result)."""
        taken, self.decided = self.decided, []
        return taken


__all__ = [
    "DECLINED",
    "EDIT_MODES",
    "STOPPED",
    "ApproveEdit",
    "Choice",
    "EditAnswer",
    "EditGate",
    "EditMode",
    "EditProposal",
    "EditRecord",
]
