"""Preference pairs for DPO: ``{"prompt", "chosen", "rejected", "metadata"}`` a line, the prompt the chat
messages before the answer (the run's instructions as the system message), chosen and rejected one
assistant message each. Two kinds: on the same prompt, a run marked good (or, unmarked, passing under the
current rubric) over one marked bad (or failing); and a corrected run (``machine fork``) over the run it
corrects, unless a person marked the corrected one bad. Besides, a change to the person's files they
approved over one they declined before it (``_edit_pairs``)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine.errors import BadInputError, Fix, NotFoundError
from machine.runs import Message, Redactor, Run, atomic_text, to_openai
from machine.spec import Case, Machine
from machine.workspace import Workspace

from .._near_duplicates import Inputs
from ._edit_pairs import EditPair, edit_pairs
from ._export_report import ExportReport, held_out_cases, unwritable
from ._marks import answered, good_mark
from ._options import ExportOptions


@dataclass
class _Prompt:
    """The runs of one prompt, by side: (run id, answer)."""

    run: Run
    chosen: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)


def _prompt_key(run: Run) -> str:
    said = [run.instructions, [m.model_dump(mode="json") for m in run.history], run.input]
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()


def _answer(run: Run) -> str:
    """The final answer a pair holds: the person's (``/good --as``), else the run's own."""
    messages = answered(run)
    last = next((m for m in reversed(messages) if m.role == "assistant" and m.content), None)
    return last.content if last is not None else run.output


def _side(run: Run, fingerprint: str, min_score: float) -> str | None:
    """chosen, rejected or neither: a person's verdict decides, else the grade under the current rubric."""
    if run.verdict is not None:
        return "chosen" if run.verdict.kind == "good" else "rejected"
    card = run.scorecard
    if card is None or card.rubric_fingerprint != fingerprint or run.score is None:
        return None
    return "chosen" if run.score >= min_score else "rejected"


@dataclass(frozen=True)
class Pair:
    """One preference: the run whose prompt it is, and the chosen and rejected (run id, answer)."""

    kind: str
    prompt: Run
    chosen: tuple[str, str]
    rejected: tuple[str, str]

    def prompt_messages(self) -> list[dict[str, Any]]:
        """The prompt in the chat shape: the instructions as the system message, earlier turns, input."""
        said = [*self.prompt.history, Message(role="user", content=self.prompt.input)]
        return to_openai(self.prompt.instructions, said, send_reasoning=False)

    def row(self, machine: str) -> dict[str, Any]:
        """The pair as a line of ``export --pairs``."""
        return {
            "prompt": self.prompt_messages(),
            "chosen": [{"role": "assistant", "content": self.chosen[1]}],
            "rejected": [{"role": "assistant", "content": self.rejected[1]}],
            "metadata": {
                "kind": self.kind,
                "machine": machine,
                "case_id": self.prompt.case_id,
                "chosen_run_id": self.chosen[0],
                "rejected_run_id": self.rejected[0],
            },
        }


def export_pairs(ws: Workspace, name: str, o: ExportOptions) -> ExportReport:
    """Write machine ``name``'s preference pairs to ``o.out``; held-out runs are left out as ``export``
    leaves them out, unless ``include_holdout``. No pair is an error saying how to make some."""
    if o.tree or o.source is not None or o.per_turn:
        raise BadInputError("pairs are of one machine's own runs: leave out tree, source and per_turn")
    spec = ws.load(name)
    held = [] if o.include_holdout else held_out_cases(ws, spec, None)
    path = Path(o.out)
    report = ExportReport(machine=name, out=str(path), runs=0, rows=0, include_holdout=o.include_holdout)
    redactor, kinds, runs = Redactor.here(ws.root), Counter[str](), set[str]()
    read = Counter[str]()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_text(path, private=True) as handle:
            for pair in iter_pairs(ws, spec, o.min_score, held, read, rl_samples=o.rl_samples):
                handle.write(json.dumps(redactor.data(pair.row(name)), ensure_ascii=False) + "\n")
                kinds[pair.kind] += 1
                runs.update((pair.chosen[0], pair.rejected[0]))
            for edit in iter_edit_pairs(ws, spec, held):
                handle.write(json.dumps(redactor.data(edit.row(name)), ensure_ascii=False) + "\n")
                kinds["edit"] += 1
                runs.add(edit.run.id)
            if not kinds:
                raise no_pairs(name, read["stored"])
    except OSError as error:
        raise unwritable(path, error) from None
    report.stored, report.held_out, report.redacted = read["stored"], len(held), redactor.count
    report.redacted_kinds = dict(redactor.kinds)
    report.rows, report.runs, report.pairs = sum(kinds.values()), len(runs), dict(kinds)
    return report


def iter_pairs(
    ws: Workspace,
    spec: Machine,
    min_score: float,
    held: Sequence[Case],
    read: Counter[str] | None = None,
    *,
    rl_samples: bool = False,
) -> Iterator[Pair]:
    """Every preference pair of ``spec``'s stored runs, none of a held-out case, nor a run an RL training
    sampled unless a person marked it (or ``rl_samples``); ``read["stored"]`` counts the runs read."""
    held_ids, held_inputs = {c.id for c in held}, Inputs(c.input for c in held)
    prompts: dict[str, _Prompt] = {}
    corrected: list[tuple[str, str, str]] = []  # (corrected run, its answer, the run it corrects)
    read = Counter() if read is None else read
    for run in ws.store.iter_runs(spec.name):
        read["stored"] += 1
        if run.status != "ok" or (not run.output and good_mark(run) is None):
            continue
        if run.case_id in held_ids or held_inputs.match(run.input) is not None:
            continue
        if run.sampled_for is not None and run.verdict is None and not rl_samples:
            continue
        side = _side(run, spec.rubric.fingerprint, min_score)
        if run.forked_from is not None and side != "rejected":
            corrected.append((run.id, _answer(run), run.forked_from))
        if side is not None and run.forked_from is None:
            group = prompts.setdefault(_prompt_key(run), _Prompt(run))
            getattr(group, side).append((run.id, _answer(run)))
    for group in prompts.values():
        count = min(len(group.chosen), len(group.rejected)) and max(len(group.chosen), len(group.rejected))
        for i in range(count):
            chosen, rejected = group.chosen[i % len(group.chosen)], group.rejected[i % len(group.rejected)]
            yield Pair("verdict", group.run, chosen, rejected)
    for run_id, answer, original_id in corrected:
        try:
            original = ws.store.get(original_id)
        except NotFoundError:  # the run it corrects is gone: nothing to prefer it over
            continue
        unseen = original.case_id not in held_ids and held_inputs.match(original.input) is None
        if unseen and original.output and answer != original.output:
            yield Pair("correction", original, (run_id, answer), (original.id, original.output))


def iter_edit_pairs(ws: Workspace, spec: Machine, held: Sequence[Case]) -> Iterator[EditPair]:
    """The pairs of the changes a person declined and then approved (``_edit_pairs``), in the runs that
    hold a declined change, none of a held-out case."""
    held_ids, held_inputs = {c.id for c in held}, Inputs(c.input for c in held)
    for run in ws.store.iter_newest_with('"decision":"declined"', spec.name):
        if run.case_id not in held_ids and held_inputs.match(run.input) is None:
            yield from edit_pairs(run)


def no_pairs(name: str, stored: int) -> BadInputError:
    return BadInputError(
        f"machine {name!r} has no preference pair in its {stored} stored runs: a pair is a run marked good "
        "(or passing) and one marked bad (or failing) on the same input, or a run made again with a "
        "correction",
        fixes=[Fix(operation="suite", machine=name, purpose="grades several runs of each case")],
    )
