"""What a person's good mark makes of a run to learn: its input and final answer alone, or (``trace``)
every step; its thinking only with ``reasoning``; the person's answer (``--as``) instead of its own."""

from __future__ import annotations

from itertools import takewhile

from machine.runs import Message, Run, Tag


def good_mark(run: Run) -> Tag | None:
    """The run's last verdict, if a person marked it good."""
    verdict = run.verdict
    return verdict if verdict is not None and verdict.kind == "good" else None


def answer_of(run: Run) -> str | None:
    """The final answer a person gave the run to learn instead of its own (``/good --as``), if any."""
    mark = good_mark(run)
    return None if mark is None else mark.answer


def answer_only(run: Run) -> bool:
    """Whether the run is learned as its input and final answer alone: marked good without ``trace``,
    with an answer to learn (its own or the person's)."""
    mark = good_mark(run)
    return mark is not None and not mark.trace and bool(mark.answer or run.output)


def answered(run: Run) -> list[Message]:
    """The run's trajectory as a person marked it good: by default its input and final answer alone
    (the answer's thinking only with ``reasoning``); with ``trace`` every step, the thinking only with
    ``reasoning``. The person's answer (``/good --as``) takes the last assistant message's place
    (without its thinking, which led to the run's own answer), and what followed it is dropped; an
    answer to a run that never replied is added. A run not marked good is learned as it is."""
    mark = good_mark(run)
    messages = run.trajectory
    if mark is None:
        return messages
    asked = list(takewhile(lambda m: m.role == "user", messages))
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if answer_only(run):
        thought = None if mark.answer or last is None or not mark.reasoning else messages[last].reasoning
        return [*asked, Message(role="assistant", content=mark.answer or run.output, reasoning=thought)]
    if not mark.reasoning:
        messages = [m.model_copy(update={"reasoning": None}) if m.reasoning else m for m in messages]
    if mark.answer is None:
        return messages
    if last is None:
        return [*messages, Message(role="assistant", content=mark.answer)]
    replaced = messages[last].model_copy(update={"content": mark.answer, "tool_calls": [], "reasoning": None})
    return [*messages[:last], replaced]
