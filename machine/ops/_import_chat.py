"""Chat JSONL in: one conversation a line, ``{"messages": [...]}`` in the OpenAI chat shape, with the
``metadata`` an export writes (model, case id, trial) where it is there, so a machine's export reads back
as the runs it was made of. Read a line at a time, each line bounded before it is parsed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from machine.budget import Usage

from ._import_read import MAX_LINE_BYTES, Outside, parsed_json, refusal


def _usage(raw: Any) -> Usage | None:
    """``{"prompt_tokens", "completion_tokens"}`` (the chat API's) or this project's own field names."""
    if not isinstance(raw, dict):
        return None
    counts = {key: value for key, value in raw.items() if isinstance(value, int) and value >= 0}
    return Usage(
        input_tokens=counts.get("input_tokens", counts.get("prompt_tokens", 0)),
        cached_input_tokens=counts.get("cached_input_tokens", 0),
        output_tokens=counts.get("output_tokens", counts.get("completion_tokens", 0)),
    )


def _line(path: Path, number: int, raw: Any) -> Outside:
    where = f"line {number}"
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        raise refusal(path, where, 'it is not a conversation: each line is an object with a "messages" list')
    found = raw.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    model = raw.get("model") or meta.get("model")
    case_id, trial = meta.get("case_id"), meta.get("trial")
    return Outside(
        where=where,
        messages=raw["messages"],
        model=model if isinstance(model, str) else None,
        usage=_usage(raw.get("usage") or meta.get("usage")),
        case_id=str(case_id) if isinstance(case_id, str | int) else None,
        trial=trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
    )


def chat_lines(path: Path) -> Iterator[Outside]:
    """Each conversation of the chat JSONL file at ``path``; blank lines are passed over."""
    with path.open("rb") as handle:
        number = 0
        while line := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise refusal(path, f"line {number}", f"it is longer than {MAX_LINE_BYTES:,} bytes")
            if line.strip():
                yield _line(path, number, parsed_json(path, line, f"line {number}"))
