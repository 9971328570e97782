"""Export: a machine's good runs as chat JSONL for fine-tuning, one ``{"messages", "tools", "metadata"}``
object a line in the OpenAI chat shape (the instructions the run was given as the system message, its
input, the assistant turns with their tool calls and reasoning, the tool results). The file holds prompts
and outputs, so it is written readable only by its owner; it streams, so memory does not grow with the
number of runs. A run a person marked good is learned as they marked it (``_marks``); an assistant message
that is context, not a target (an earlier turn of the conversation, a step whose tool calls all failed), is
written with ``"weight": 0`` (``_targets``); ``pairs`` writes preference pairs instead (``_pairs``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from machine.errors import BadInputError
from machine.runs import Redactor, Run, atomic_text, openai_tools, to_openai
from machine.spec import Machine
from machine.workspace import Workspace

from ._export_report import ExportReport, FunnelStep, held_out_cases, unwritable
from ._marks import answered
from ._options import ExportOptions
from ._pairs import export_pairs
from ._select import Funnel, Selection, source_of
from ._targets import target_steps, weighted


def rows_of(
    run: Run,
    target: Machine,
    *,
    per_turn: bool = False,
    source: Machine | None = None,
    redactor: Redactor | None = None,
) -> list[dict[str, Any]]:
    """The training rows of one run as ``target`` should learn it: the run as it was, or (``source``, a
    run of another machine) with ``target``'s instructions and its reasoning rewritten by ``target``'s
    ``transform_reasoning``; either way with its secrets redacted (``redactor`` counts them; by default
    the secrets of this process's environment and the common key formats). Its assistant messages that
    are not targets carry ``"weight": 0``; ``per_turn`` makes a row ending at each target, the targets
    before it context there (each is learned in its own row)."""
    messages = [*run.history, *answered(run)]
    instructions = run.instructions
    if source is not None:
        instructions = target.instructions
        change = target.transform_reasoning
        if change is not None:
            messages = [
                m.model_copy(update={"reasoning": change(m.reasoning)}) if m.reasoning else m
                for m in messages
            ]
    wire = (redactor or Redactor.here()).data(to_openai(instructions, messages, send_reasoning=True))
    tools = openai_tools(target.tools)
    metadata = {
        "run_id": run.id,
        "machine": run.machine,
        "version": run.version,
        "case_id": run.case_id,
        "trial": run.trial,
        "score": run.score,
        "model": run.model,
        "harness": run.harness,
    }
    if source is not None:
        metadata["as"] = target.name
    targets = target_steps(run, wire)
    if not per_turn:
        return [{"messages": weighted(wire, targets), "tools": tools, "metadata": metadata}]
    return [
        {"messages": weighted(wire[: end + 1], [end]), "tools": tools, "metadata": {**metadata, "turn": n}}
        for n, end in enumerate(targets, start=1)
    ]


def _members(
    ws: Workspace, name: str, tree: bool, source: str | None
) -> list[tuple[Machine, Machine | None]]:
    """(the machine whose runs are read, the machine they are exported as when another)."""
    target = ws.load(name)
    if source is not None:
        return [(ws.load(source), target)]
    names = ws.family(name) if tree else [name]
    return [(ws.load(member), None) for member in names]


def export(ws: Workspace, name: str, options: ExportOptions | None = None, **fields: Any) -> ExportReport:
    """Write the selected runs of machine ``name`` (of its family with ``tree``; of machine ``source``
    exported as ``name`` with ``source``) to ``out``, as ``options`` (or its fields given as keywords)
    say; an empty selection is an error that says which filter emptied it, and leaves no file. The runs
    of held-out cases (each member's holdout.json, and ``name``'s for runs exported as it) are left out,
    as ``train`` leaves them out, unless ``include_holdout``: training on them would let a checkpoint pass
    the gate on what it memorized."""
    o = ExportOptions.of(options, **fields)
    if o.pairs:
        return export_pairs(ws, name, o)
    tree, source, per_turn, include_holdout = o.tree, o.source, o.per_turn, o.include_holdout
    if tree and source is not None:
        raise BadInputError("export takes the family (tree) or another machine's runs (source), not both")
    members = _members(ws, name, tree, source)
    path = Path(o.out)
    report = ExportReport(
        machine=name,
        out=str(path),
        runs=0,
        rows=0,
        per_turn=per_turn,
        source=source,
        include_holdout=include_holdout,
    )
    totals: list[list[Any]] = []
    exported: Counter[str] = Counter()
    redactor = Redactor.here(ws.root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_text(path, private=True) as handle:  # a file beside --out: fresh, never a symlink
            for spec, target in members:
                tools = json.dumps(openai_tools((target or spec).tools), ensure_ascii=False)
                funnel = Funnel()
                held = [] if include_holdout else held_out_cases(ws, spec, target)
                report.held_out += len(held)
                selection = Selection(spec.rubric.fingerprint, o.min_score, o.best, o.since, o.cases, held)
                selection.tags, selection.rl_samples = o.tags, o.rl_samples
                for run in selection.from_store(ws.store, spec.name, funnel):
                    rows = rows_of(
                        run,
                        target or spec,
                        per_turn=per_turn,
                        source=spec if target else None,
                        redactor=redactor,
                    )
                    handle.writelines(_line(row, tools) for row in rows)
                    exported[source_of(run)] += 1
                    report.runs += 1
                    report.rows += len(rows)
                _add(totals, report, funnel)
            if report.rows == 0:
                raise _empty(source or name, totals, report)
    except OSError as error:
        raise unwritable(path, error) from None
    report.funnel = [FunnelStep(keeps=what, left=left) for what, left, *_ in totals]
    report.redacted, report.redacted_kinds = redactor.count, dict(redactor.kinds)
    report.sources = dict(exported.most_common())
    return report


def _line(row: dict[str, Any], tools: str) -> str:
    """``json.dumps(row)`` as a line, with the tools (the same in every row of a machine, and often most
    of its text) encoded once."""
    messages = json.dumps(row["messages"], ensure_ascii=False)
    metadata = json.dumps(row["metadata"], ensure_ascii=False)
    return f'{{"messages": {messages}, "tools": {tools}, "metadata": {metadata}}}\n'


def _add(totals: list[list[Any]], report: ExportReport, funnel: Funnel) -> None:
    """Add one member's funnel to the family's."""
    report.stored += funnel.stored
    for index, (what, left, widen) in enumerate(funnel.steps):
        if index < len(totals):
            totals[index][1] += left
        else:
            totals.append([what, left, widen, funnel.fixes[index] if index < len(funnel.fixes) else ()])


def _empty(name: str, totals: list[list[Any]], report: ExportReport) -> BadInputError:
    funnel = Funnel(
        stored=report.stored, steps=[(w, n, h) for w, n, h, _ in totals], fixes=[f for *_, f in totals]
    )
    return funnel.empty_error(name)


def iter_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of an exported file, one at a time."""
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
