"""A stored run whole, as ``machine show-run`` prints it: where it came from, every step, its output, its
scorecard with each grader's reason, and the person's tags. Nothing is cut: this is the place to read
what a listing shortens. What the run holds is made inert before it is printed."""

from __future__ import annotations

import json
from datetime import datetime

import click

from machine.runs import EditRecord, Message, Run, Tag, inert, timestamp

from ._render import scorecard_lines


def fmt_time(when: datetime) -> str:
    """The one timestamp form (``timestamp``), to the second: ``2026-12-03T15:40:01Z``."""
    return timestamp(when.replace(microsecond=0))


def _indented(text: str) -> str:
    """Each line of ``text`` indented; split at newlines only, so a carriage return (or another control
    that ``splitlines`` breaks at) stays in its line, where ``inert`` shows it."""
    lines = (text or "(empty)").replace("\r\n", "\n").removesuffix("\n").split("\n")
    return "\n".join(f"    {line}" for line in lines)


def header_lines(run: Run) -> list[str]:
    """Who ran it, on what, when, for how long and at what cost."""
    version = f" {run.version}" if run.version else ""
    seconds = run.timings.seconds
    took = "" if seconds is None else f" · {seconds:.1f} s"
    usage = run.usage
    tokens = f"{usage.input_tokens} in / {usage.output_tokens} out tokens"
    lines = [
        f"run {run.id} · {run.machine}{version} · {run.model} via {run.harness}",
        f"  started {fmt_time(run.created_at)}{took} · {tokens} · ${run.cost_usd:.4f}",
    ]
    where = {"case": run.case_id, "trial": run.trial, "suite": run.suite_id}
    where["conversation"] = run.conversation_id
    if any(value is not None for value in where.values()):
        lines.append("  " + " · ".join(f"{key} {value}" for key, value in where.items() if value is not None))
    if run.sampled_for:
        lines.append(f"  sampled by RL training {run.sampled_for}: learned from only if marked good")
    if run.status == "error":
        lines.append(f"  FAILED: {run.error}")
    elif run.stop_reason and run.stop_reason != "end_turn":
        lines.append(f"  stopped: {run.stop_reason}")
    return lines


def step_lines(message: Message) -> list[str]:
    """One message of the trajectory: its reasoning, text, tool calls, or tool result, whole."""
    lines: list[str] = []
    if message.reasoning:
        lines += ["  reasoning:", _indented(message.reasoning)]
    if message.role == "tool":
        failed = " (failed)" if message.is_error else ""
        lines += [f"  ← {message.name or 'tool'}{failed}:", _indented(message.content)]
        return lines + [edit_line(edit) for edit in message.edits]
    if message.content:
        lines += [f"  {message.role}:", _indented(message.content)]
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
        lines.append(f"  → {call.name}({arguments or ''})")
    return lines


def edit_line(edit: EditRecord) -> str:
    """A change to the person's files and what became of it: ``change to app.py approved (terminal)``."""
    what = f"command {edit.command!r}" if edit.command is not None else f"change to {edit.path}"
    return f"    {what} {edit.decision} ({edit.by}, {fmt_time(edit.at)})"


def tag_words(tag: Tag) -> str:
    """``good (whole trajectory): the tone is right``: a tag in words."""
    kept = [
        *(["learn this answer: " + repr(tag.answer)] if tag.answer else []),
        *(["whole trajectory"] if tag.trace else []),
        *(["with its reasoning"] if tag.reasoning else []),
    ]
    said = f" ({', '.join(kept)})" if kept else ""
    return f"{tag.kind}{said}" + (f": {tag.note}" if tag.note else "")


def tag_line(tag: Tag) -> str:
    return f"  {tag_words(tag)} (at {fmt_time(tag.at)})"


def print_whole(run: Run) -> None:
    """The run whole: header, input, every step after the input, output, scorecard, tags."""
    lines = header_lines(run)
    lines += ["", "input:", _indented(run.input)]
    steps = [line for message in run.trajectory[1:] for line in step_lines(message)]
    lines += ["", "trajectory:", *(steps or ["  (no steps)"])]
    lines += ["", "output:", _indented(run.output)]
    if run.scorecard is None:
        lines += ["", "scorecard: not graded (`machine eval` grades it, at the judges' price)"]
    else:
        lines += ["", "scorecard:", *scorecard_lines(run.scorecard)]
    tags = [tag_line(tag) for tag in run.tags]
    lines += ["", "tags:", *(tags or ["  none"])]
    click.echo(inert("\n".join(lines)))
