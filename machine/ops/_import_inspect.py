"""Inspect eval logs in (``.eval`` or ``.json``), read with ``inspect_ai``'s own log API: one run a
sample, its messages with tool calls and results, its output, model, token usage, id and epoch (as case
id and trial), its target kept with the case for graders that compare with it, and its error (an errored
sample is a failed run). ``inspect_ai`` is the ``inspect`` extra, imported only here. An ``.eval`` is a
zip: the sizes its members declare are checked before any is unpacked (``inspect_ai`` reads no further
than a member declares), so a zip bomb is refused, not unpacked."""

from __future__ import annotations

import importlib
import json
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from machine.budget import Usage
from machine.errors import BadInputError

from ._import_read import MAX_IMPORT_RUNS, MAX_PACKING, MAX_UNPACKED_BYTES, Outside, refusal

SKIPPED_FIELDS = {"events", "events_data", "store", "timelines"}
"""What a sample holds that a run does not keep: not read at all (the events are most of a log)."""


def _inspect_log() -> Any:
    """``inspect_ai.log``, or an error saying how to install it."""
    try:
        return importlib.import_module("inspect_ai.log")
    except ImportError:
        raise BadInputError(
            "reading an Inspect log takes the inspect_ai package, which is not installed: "
            "pip install 'machine[inspect]'"
        ) from None


def check_zip(path: Path) -> None:
    """Refuse an ``.eval`` whose members would unpack past ``MAX_UNPACKED_BYTES`` all told, or one of
    them past ``MAX_PACKING`` times its packed size."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise refusal(path, "", f"it is not a readable zip file ({error})") from None
    total = 0
    for member in members:
        total += member.file_size
        if member.file_size > MAX_PACKING * max(member.compress_size, 1024):
            raise refusal(
                path, member.filename[:80], f"it unpacks to over {MAX_PACKING} times its packed size"
            )
    if total > MAX_UNPACKED_BYTES:
        raise refusal(path, "", f"it unpacks to {total:,} bytes, over {MAX_UNPACKED_BYTES:,}")


def _content(content: Any) -> tuple[str, str | None]:
    """(text, reasoning) of an Inspect message's content: a string, or parts (an image or other part
    named in brackets)."""
    if isinstance(content, str):
        return content, None
    text, thought = [], []
    for part in content:
        kind = getattr(part, "type", "part")
        if kind == "text":
            text.append(part.text)
        elif kind == "reasoning":
            thought.append(part.reasoning if not getattr(part, "redacted", False) else "[redacted]")
        else:
            text.append(f"[{kind}]")
    return "\n".join(text), "\n".join(thought) or None


def _message(message: Any) -> dict[str, Any]:
    """An Inspect chat message in the OpenAI chat shape."""
    text, thought = _content(message.content)
    said: dict[str, Any] = {"role": message.role, "content": text}
    if message.role == "assistant":
        said["reasoning_content"] = thought
        said["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function, "arguments": c.arguments}}
            for c in message.tool_calls or []
        ]
    elif message.role == "tool":
        said |= {"tool_call_id": message.tool_call_id, "name": message.function}
        if message.error is not None:
            said |= {"is_error": True, "content": text or message.error.message}
    return said


def _usage(sample: Any) -> Usage | None:
    if not sample.model_usage:
        return None
    total = Usage()
    for used in sample.model_usage.values():
        cached = min(used.input_tokens_cache_read or 0, used.input_tokens)
        total += Usage(
            input_tokens=used.input_tokens, cached_input_tokens=cached, output_tokens=used.output_tokens
        )
    return total


def _when(value: str | None) -> datetime | None:
    try:
        return None if value is None else datetime.fromisoformat(value)
    except ValueError:
        return None


def _sample(sample: Any, model: str) -> Outside:
    """One sample as a run is made of it."""
    where = f"sample {sample.id!r} (epoch {sample.epoch})"
    messages = [_message(m) for m in sample.messages]
    if not messages and isinstance(sample.input, str):  # a sample that failed before it ran
        messages = [{"role": "user", "content": sample.input}]
    target = sample.target if isinstance(sample.target, str) else json.dumps(sample.target)
    asked = sample.input if isinstance(sample.input, str) else ""
    if not isinstance(sample.input, str) and sample.input:  # a list of messages: the last one asked
        asked = _content(sample.input[-1].content)[0]
    return Outside(
        where=where,
        messages=messages,
        model=next(iter(sample.model_usage), None) or model,
        usage=_usage(sample),
        output=sample.output.completion or None,
        error=None if sample.error is None else sample.error.message or "the sample failed",
        case_id=str(sample.id),
        case={"id": str(sample.id), "input": asked, "target": target} if sample.target else None,
        trial=sample.epoch,
        started_at=_when(sample.started_at),
        finished_at=_when(sample.completed_at),
    )


def inspect_samples(path: Path) -> Iterator[Outside]:
    """Each sample of the Inspect log at ``path``."""
    log_api = _inspect_log()
    if zipfile.is_zipfile(path):
        check_zip(path)
    try:
        log = log_api.read_eval_log(str(path), resolve_attachments=True, exclude_fields=SKIPPED_FIELDS)
    except (Exception, RecursionError) as error:
        said = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise refusal(path, "", f"inspect_ai cannot read it as an eval log ({said})") from None
    samples = log.samples or []
    if len(samples) > MAX_IMPORT_RUNS:
        raise refusal(
            path, "", f"it holds {len(samples):,} samples, over the {MAX_IMPORT_RUNS:,} one import takes"
        )
    for sample in samples:
        yield _sample(sample, log.eval.model)
