"""Runs as Inspect AI eval logs, written through ``inspect_ai``'s own log API so ``inspect view`` and every
reader of its format open them: an eval per group of runs (a suite), a sample per run (its case id, its
trial as the epoch), its messages with tool calls and results, its output, a score per criterion (an
UNSCORED one as Inspect's own unscored score, never 0), its model, usage and cost. ``inspect_ai`` (the
``inspect`` extra) is imported only when a log is written."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from machine.errors import BadInputError
from machine.runs import CriterionScore, Message, Run, ToolCall, timestamp

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalResults, EvalSample, EvalScore, EvalStats
    from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score
    from inspect_ai.tool import ToolCall as InspectToolCall

EXTRA = "inspect"


class EvalGroup(Protocol):
    """One eval's runs and what describes it (``machine.ops.EvalRuns``)."""

    task: str
    runs: list[Run]
    suite_id: str | None
    criteria: dict[str, str]


def needs_inspect() -> None:
    """Nothing when ``inspect_ai`` imports, else the install that brings it, in words."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as error:
        raise BadInputError(
            f"writing Inspect logs needs inspect_ai ({error}): pip install 'machine[{EXTRA}]'"
        ) from None


def inspect_writer() -> Callable[[EvalGroup, Path], Path]:
    """The writer ``machine.ops.export_eval_logs`` uses by default (the ``inspect_log`` part), once
    ``inspect_ai`` was found: a missing extra is said before any run is read or folder made."""
    needs_inspect()
    return write_inspect_log


def write_inspect_log(group: EvalGroup, folder: Path) -> Path:
    """Write ``group`` as one ``.eval`` log in ``folder`` (named as Inspect names its logs: when, task,
    id) and return its path."""
    needs_inspect()
    from inspect_ai.log import write_eval_log

    log = eval_log(group)
    slug = group.task.replace("/", "-")
    when = log.eval.created[:19].replace(":", "-")
    path = folder / f"{when}_{slug}_{log.eval.eval_id}.eval"
    write_eval_log(log, str(path), format="eval")
    return path


def eval_log(group: EvalGroup) -> EvalLog:
    """``group`` as an Inspect ``EvalLog``: the spec, the plan (the harness), results, stats, samples."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalPlan, EvalPlanStep, EvalSpec

    runs = group.runs
    first = runs[0]
    model = Counter(run.model for run in runs).most_common(1)[0][0]
    samples = _samples(runs)
    eval_id = _eval_id(group)
    spec = EvalSpec(
        eval_id=eval_id,
        run_id=group.suite_id or eval_id,
        created=timestamp(first.timings.started_at),
        task=group.task,
        task_id=group.suite_id or eval_id,
        task_version=first.version or 0,
        dataset=EvalDataset(
            name=group.suite_id or group.task, samples=len(samples), sample_ids=_ids(samples)
        ),
        model=model,
        config=EvalConfig(epochs=max(sample.epoch for sample in samples)),
        packages={"machine": first.library_version} if first.library_version else {},
        metadata=_eval_metadata(group, runs),
    )
    harnesses = sorted({run.harness for run in runs})
    plan = EvalPlan(steps=[EvalPlanStep(solver=f"machine/{harness}") for harness in harnesses])
    return EvalLog(
        status="success",
        eval=spec,
        plan=plan,
        results=_results(group, samples),
        stats=_stats(runs),
        samples=samples,
    )


def _eval_id(group: EvalGroup) -> str:
    """A stable id of the eval: the same runs give the same id (a second export names the same file)."""
    digest = hashlib.sha256("\n".join(run.id for run in group.runs).encode()).hexdigest()
    return digest[:22]


def _ids(samples: Sequence[EvalSample]) -> list[str]:
    return list(dict.fromkeys(str(sample.id) for sample in samples))


def _eval_metadata(group: EvalGroup, runs: Sequence[Run]) -> dict[str, Any]:
    scorecards = [run.scorecard for run in runs if run.scorecard is not None]
    return {
        "machine": group.task,
        "suite_id": group.suite_id,
        "versions": sorted({run.version for run in runs if run.version}),
        "models": sorted({run.model for run in runs}),
        "harnesses": sorted({run.harness for run in runs}),
        "rubric_fingerprints": sorted({card.rubric_fingerprint for card in scorecards}),
        "pass_score": scorecards[0].pass_score if scorecards else None,
        "cost_usd": sum(run.cost_usd for run in runs),
    }


def _samples(runs: Sequence[Run]) -> list[EvalSample]:
    """A sample a run: its case id and trial (Inspect's epochs count from 1), or its run id where the
    run has no case or another run took that case and trial already (a log holds each pair once)."""
    taken: set[tuple[str, int]] = set()
    samples = []
    for run in runs:
        key = (run.case_id or run.id, (run.trial or 0) + 1)
        if key in taken:
            key = (run.id, 1)
        taken.add(key)
        samples.append(_sample(run, *key))
    return samples


def _sample(run: Run, sample_id: str, epoch: int) -> EvalSample:
    from inspect_ai.log import EvalError, EvalSample

    usage = _usage(run)
    finished = run.timings.finished_at
    return EvalSample(
        id=sample_id,
        epoch=epoch,
        input=run.input,
        target=_target(run),
        messages=_messages(run),
        output=_output(run, usage),
        scores=_scores(run),
        metadata=_sample_metadata(run),
        model_usage={run.model: usage},
        started_at=timestamp(run.timings.started_at),
        completed_at=timestamp(finished) if finished else None,
        total_time=run.timings.seconds,
        uuid=run.id,
        error=None
        if run.status == "ok"
        else EvalError(message=run.error or "the run failed", traceback="", traceback_ansi=""),
    )


def _target(run: Run) -> str:
    """The case's expected answer, where it names one as text."""
    expected = (run.case or {}).get("expected")
    return expected if isinstance(expected, str) else ""


def _sample_metadata(run: Run) -> dict[str, Any]:
    card = run.scorecard
    return {
        "run_id": run.id,
        "machine": run.machine,
        "version": run.version,
        "revision": run.revision,
        "case_id": run.case_id,
        "trial": run.trial,
        "suite_id": run.suite_id,
        "model": run.model,
        "harness": run.harness,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "cost_usd": run.cost_usd,
        "grading_cost_usd": card.cost_usd if card else 0.0,
        "score": run.score,
        "passed": run.passed,
        "pass_score": card.pass_score if card else None,
        "rubric_fingerprint": card.rubric_fingerprint if card else None,
        "unscored": card.unscored if card else [],
        "tags": [tag.kind for tag in run.tags],
    }


def _usage(run: Run) -> ModelUsage:
    from inspect_ai.model import ModelUsage

    used = run.usage
    return ModelUsage(
        input_tokens=used.input_tokens,
        output_tokens=used.output_tokens,
        total_tokens=used.input_tokens + used.output_tokens,
        input_tokens_cache_read=used.cached_input_tokens or None,
        total_cost=run.cost_usd,
    )


def _scores(run: Run) -> dict[str, Score] | None:
    """A score per criterion; an UNSCORED one is Inspect's unscored score (NaN, left out of every metric)
    with the grader's reason."""
    if run.scorecard is None:
        return None
    return {name: _score(grade) for name, grade in run.scorecard.criteria.items()}


def _score(grade: CriterionScore) -> Score:
    from inspect_ai.scorer import Score

    metadata = {
        "weight": grade.weight,
        "grader": grade.grader,
        "cost_usd": grade.cost_usd,
        **({"details": grade.details} if grade.details else {}),
    }
    if grade.score is None:
        return Score.unscored(reason="unscored", explanation=grade.reason, metadata=metadata)
    return Score(value=grade.score, explanation=grade.reason, metadata=metadata)


def _messages(run: Run) -> list[ChatMessage]:
    """The instructions as the system message, the conversation before the run, then its trajectory."""
    from inspect_ai.model import ChatMessageSystem

    head: list[ChatMessage] = [ChatMessageSystem(content=run.instructions)] if run.instructions else []
    return head + [_message(message, run.model) for message in [*run.history, *run.trajectory]]


def _message(message: Message, model: str) -> ChatMessage:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        ContentReasoning,
        ContentText,
    )
    from inspect_ai.tool import ToolCallError

    if message.role == "assistant":
        content: Any = message.content
        if message.reasoning:
            content = [ContentReasoning(reasoning=message.reasoning), ContentText(text=message.content)]
        calls = [_tool_call(call) for call in message.tool_calls] or None
        return ChatMessageAssistant(content=content, tool_calls=calls, model=model, source="generate")
    if message.role == "tool":
        error = ToolCallError(type="unknown", message=message.content) if message.is_error else None
        return ChatMessageTool(
            content=message.content, tool_call_id=message.tool_call_id, function=message.name, error=error
        )
    if message.role == "system":
        return ChatMessageSystem(content=message.content)
    return ChatMessageUser(content=message.content, source="input")


def _tool_call(call: ToolCall) -> InspectToolCall:
    """A tool call as Inspect holds it; arguments that did not parse are kept as the parse error."""
    from inspect_ai.tool import ToolCall

    if call.arguments is None:
        raw = call.raw_arguments or ""
        return ToolCall(id=call.id, function=call.name, arguments={}, parse_error=f"unparsed: {raw}")
    return ToolCall(id=call.id, function=call.name, arguments=call.arguments)


def _output(run: Run, usage: ModelUsage) -> ModelOutput:
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput

    reply = ChatMessageAssistant(content=run.output, model=run.model, source="generate")
    stop = "stop" if run.status == "ok" else "unknown"
    return ModelOutput(
        model=run.model,
        choices=[ChatCompletionChoice(message=reply, stop_reason=stop)],
        usage=usage,
        error=run.error,
    )


def _results(group: EvalGroup, samples: Sequence[EvalSample]) -> EvalResults:
    """Per criterion: its mean over the samples that scored it; the unscored ones counted apart."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    scores: list[EvalScore] = []
    names = list(group.criteria) or sorted({name for s in samples for name in (s.scores or {})})
    for name in names:
        values = [s.scores[name].as_float() for s in samples if s.scores and name in s.scores]
        scored = [value for value in values if value == value]  # NaN: unscored
        metrics = {"mean": EvalMetric(name="mean", value=sum(scored) / len(scored))} if scored else {}
        scores.append(
            EvalScore(
                name=name,
                scorer=name,
                scored_samples=len(scored),
                unscored_samples=len(samples) - len(scored),
                metrics=metrics,
                metadata={"description": group.criteria.get(name, "")},
            )
        )
    completed = sum(1 for s in samples if s.error is None)
    return EvalResults(total_samples=len(samples), completed_samples=completed, scores=scores)


def _stats(runs: Sequence[Run]) -> EvalStats:
    from inspect_ai.log import EvalStats

    usage: dict[str, ModelUsage] = {}
    for run in runs:
        used = _usage(run)
        usage[run.model] = usage[run.model] + used if run.model in usage else used
    ends = [run.timings.finished_at for run in runs if run.timings.finished_at is not None]
    return EvalStats(
        started_at=timestamp(min(run.timings.started_at for run in runs)),
        completed_at=timestamp(max(ends)) if ends else "",
        model_usage=usage,
    )
