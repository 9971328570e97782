"""Asking the author machine for files until they are accepted: each reply's files are read, then vetted
in a process of their own; what is wrong goes back to it in the same conversation, ``retries`` times, and
checks that may measure nothing go back once for a second look. ``specialize`` (a child's files) and
``draft_rubric`` (a rubric draft) share it; each says how to read, vet and name what it asks for."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from machine.errors import MachineError
from machine.runs import Message, Run, new_run_id
from machine.spec import Case, Machine
from machine.workspace import Workspace

from ._files import AuthoredFiles
from ._report import Attempt
from .vetting import Vetting

AUTHOR = "author"
"""The built-in machine that writes children, their cases and rubric drafts."""
SAMPLE_RUNS = 6
"""A machine's stored runs its author's checks are tried on (and the author is shown)."""
FRESH_SAMPLES = 3
"""Cases of a machine run to make sample runs when it has none stored."""


def spent(run: Run) -> float:
    """What a run cost, its grading included."""
    return run.cost_usd + (run.scorecard.cost_usd if run.scorecard else 0.0)


def stored_samples(ws: Workspace, name: str) -> list[Run]:
    """``name``'s newest runs of distinct cases, passing and failing ones alike as far as they go (a check
    is tried on both kinds)."""
    newest: dict[str, Run] = {}
    for run in ws.store.runs(name, limit=200):
        if run.status == "ok" and run.case is not None:
            newest.setdefault(run.case_id or "", run)
    passed = [run for run in newest.values() if run.passed]
    others = [run for run in newest.values() if not run.passed]
    take = min(len(passed), max(SAMPLE_RUNS // 2, SAMPLE_RUNS - len(others)))
    return passed[:take] + others[: SAMPLE_RUNS - take]


async def sample_runs(ws: Workspace, spec: Machine) -> tuple[list[Run], float]:
    """The runs the author's checks are tried on: ``spec``'s stored ones, else fresh runs of its first few
    cases (none when it has no cases to run); and what the fresh ones cost."""
    stored = stored_samples(ws, spec.name)
    if stored:
        return stored, 0.0
    try:
        cases = ws.cases(spec)
    except MachineError:  # no cases file, or one that does not read
        return [], 0.0
    return await fresh_samples(ws, spec, cases)


async def fresh_samples(ws: Workspace, spec: Machine, cases: Sequence[Case]) -> tuple[list[Run], float]:
    """Runs of ``spec`` on the first few ``cases``, graded, for a machine with none stored; and their cost."""
    runs, cost = [], 0.0
    for case in cases[:FRESH_SAMPLES]:
        run = await ws.run(spec, case.input, case=case, trial=0, grade=True)
        cost += spent(run)
        if run.status == "ok":
            runs.append(run)
    return runs, cost


def _problems_message(problems: Sequence[str], what: str) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        f"The files you wrote for {what} were checked and cannot be used yet:\n{listed}\n"
        "Write all of them again, with these put right, each in its <file path=...> block."
    )


def _second_look_message(notes: Sequence[str], what: str) -> str:
    listed = "\n".join(f"- {n}" for n in notes)
    return (
        f"The files for {what} load and their checks run, but some may measure nothing:\n{listed}\n"
        "Take a second look: a check must read what the run did and tell good runs from bad ones. Write "
        "all of the files again (the same ones, if you are sure they are right)."
    )


@dataclass(frozen=True)
class Accepted:
    """The files an author wrote that passed vetting (or could not be vetted: ``vetting.isolated`` is
    False), the attempt that wrote them and what vetting found."""

    attempt: Attempt
    files: dict[str, str]
    vetting: Vetting


@dataclass
class Authoring:
    """One conversation with the author about ``what`` (``the child 'dev/edge'``)."""

    ws: Workspace
    author: Machine
    model: str
    what: str
    retries: int
    read: Callable[[str], AuthoredFiles]
    vet: Callable[[dict[str, str]], Awaitable[Vetting]]
    charge: Callable[[float], None]
    """Counts each call's cost where the caller keeps it."""
    at: Callable[[str], None]
    """Says where the work is, for a report that stops there."""
    attempts: list[Attempt] = field(default_factory=list)
    second_look: list[str] = field(default_factory=list)
    refused: str | None = None
    """Why nothing was accepted, when nothing was."""

    async def ask(self, text: str, history: list[Message], conversation: str) -> Run:
        run = await self.ws.run(
            self.author, text, history=history, conversation_id=conversation, model=self.model, grade=True
        )
        self.charge(spent(run))
        return run

    async def until_accepted(self, brief: str) -> Accepted | None:
        """Ask with ``brief``, then with what was wrong, until a reply's files are accepted."""
        history: list[Message] = []
        conversation, message = new_run_id(), brief
        accepted: Accepted | None = None
        tries, looked = self.retries + 1, False
        while tries > 0:
            attempt = Attempt(number=len(self.attempts) + 1)
            self.attempts.append(attempt)
            self.at(f"asking the author for {self.what} (attempt {attempt.number})")
            run = await self.ask(message, history, conversation)
            attempt.run_id = run.id
            if run.status == "error":
                attempt.outcome, attempt.problems = "no reply", [f"the author's call failed: {run.error}"]
                break
            history = [*history, *run.trajectory]
            files, vetting = await self._check(attempt, run.output)
            if vetting is not None and vetting.isolated is False:  # nothing can be run here: no retry helps
                attempt.outcome, accepted = "unvetted", Accepted(attempt, files, vetting)
                break
            if vetting is None or not vetting.ok:
                tries -= 1
                attempt.outcome = "sent back" if tries > 0 else "refused"
                message = _problems_message(attempt.problems, self.what)
                continue
            if accepted is not None:  # the second look's reply
                self._after_second_look(vetting)
            accepted = Accepted(attempt, files, vetting)
            if vetting.second_look and not looked:
                looked, tries = True, 1
                attempt.second_look, attempt.outcome = list(vetting.second_look), "sent back"
                self.second_look = [f"sent back: {note}" for note in vetting.second_look]
                message = _second_look_message(vetting.second_look, self.what)
                continue
            break
        return self._chosen(accepted)

    async def _check(self, attempt: Attempt, reply: str) -> tuple[dict[str, str], Vetting | None]:
        authored = self.read(reply)
        attempt.written = sorted(authored.files)
        if not authored.ok:
            attempt.problems = list(authored.problems)
            return authored.files, None
        self.at(f"checking the files for {self.what} (attempt {attempt.number})")
        vetting = await self.vet(authored.files)
        attempt.seconds, attempt.problems = vetting.seconds, list(vetting.problems)
        return authored.files, vetting

    def _after_second_look(self, vetting: Vetting) -> None:
        if vetting.second_look:
            self.second_look += [f"still, after the second look: {note}" for note in vetting.second_look]
        else:
            self.second_look.append("after the second look, every check tells the sample runs apart")

    def _chosen(self, accepted: Accepted | None) -> Accepted | None:
        if accepted is None:
            last = self.attempts[-1] if self.attempts else None
            said = "; ".join(last.problems) if last and last.problems else "no usable reply"
            self.refused = f"{self.what} was refused after {len(self.attempts)} attempts: {said}"
            return None
        if self.attempts[-1] is not accepted.attempt:  # the second look's reply was not usable
            self.second_look.append(
                f"the second look's reply could not be used, so attempt {accepted.attempt.number}'s files "
                "are kept"
            )
        if accepted.attempt.outcome != "unvetted":
            accepted.attempt.outcome = "accepted"
        return accepted
