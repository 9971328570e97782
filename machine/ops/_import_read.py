"""What the readers of outside runs share (``_import``): the bounds every read keeps, the record each reader
makes of one sample, line or trace (an ``Outside``: its messages in the OpenAI chat shape, whatever the
file's own), and the one way such a record becomes an observed run, its secrets redacted and its text held
to the bounds the agent loop keeps. A file is outside data, written by anyone: each check refuses in words
that name the file and the line, sample or trace at fault, before anything is stored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from machine.budget import Usage
from machine.errors import BadInputError
from machine.runs import MAX_RUN_TEXT, Message, Redactor, Run, Timings, bounded
from machine.spec import MAX_DEPTH, depth

MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""The largest file read (256 MiB), checked before a byte of it is parsed."""
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
"""What an Inspect ``.eval`` (a zip) may unpack to, all its members together (1 GiB)."""
MAX_PACKING = 100
"""How many times its packed size one member of an ``.eval`` may unpack to: more is a zip bomb's mark."""
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line of a JSON Lines file (16 MiB)."""
MAX_IMPORT_RUNS = 100_000
"""Runs one file may hold."""
MAX_MESSAGES = 10_000
"""Messages one run may hold."""
Role = Literal["system", "user", "assistant", "tool"]
ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
"""The chat roles a run keeps (``developer`` is the newer name of ``system``)."""


@dataclass
class Outside:
    """One sample, line or trace of an outside file, as a run is made of it."""

    where: str
    """Which one, in words: ``line 3``, ``sample 'q7' (epoch 2)``, ``trace 5b8e…``."""
    messages: list[dict[str, Any]]
    """Its conversation in the OpenAI chat shape (system, user, assistant with tool calls, tool)."""
    model: str | None = None
    usage: Usage | None = None
    output: str | None = None
    """The final answer where the file says it apart from the messages; else the last assistant text."""
    error: str | None = None
    case_id: str | None = None
    case: dict[str, Any] | None = None
    trial: int | None = None
    conversation_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


MESSAGES = TypeAdapter(list[Message])
"""Messages made from their fields in one validation (their shape checked before, in words)."""


def refusal(path: Path, where: str, what: str) -> BadInputError:
    """The error for a file refused: the file, the part at fault, what is wrong and that nothing was kept."""
    at = f" ({where})" if where else ""
    return BadInputError(f"cannot import {path}{at}: {what}; nothing was imported")


def parsed_json(path: Path, text: str | bytes, where: str) -> Any:
    """``text`` as JSON, refused in words when it is not JSON or nests deeper than ``MAX_DEPTH``."""
    too_deep = f"lists or objects nest more than {MAX_DEPTH} levels deep"
    try:
        value = json.loads(text)
    except RecursionError:
        raise refusal(path, where, too_deep) from None
    except UnicodeDecodeError:
        raise refusal(path, where, "it is not UTF-8 text") from None
    except ValueError as error:
        raise refusal(path, where, f"it is not valid JSON ({error})") from None
    raw = text.encode() if isinstance(text, str) else text
    opens = raw.count(b"[") + raw.count(b"{")
    if opens > MAX_DEPTH and depth(value) > MAX_DEPTH:  # fewer brackets cannot nest deeper
        raise refusal(path, where, too_deep)
    return value


def _text(path: Path, where: str, content: Any) -> str:
    """A message's content as text: a string, or the text of its parts (an image or other part named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise refusal(path, where, f"a message's content is {type(content).__name__}, not text or parts")
    said = []
    for part in content:
        if isinstance(part, str):
            said.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            said.append(part["text"])
        elif isinstance(part, dict):
            said.append(f"[{str(part.get('type') or 'part')[:40]}]")
    return "\n".join(said)


def _call(path: Path, where: str, raw: Any) -> dict[str, Any]:
    """One tool call of the OpenAI shape (``{"id", "function": {"name", "arguments"}}``), as the fields of
    a ``ToolCall``."""
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise refusal(path, where, "a tool call has no function name")
    arguments = function.get("arguments")
    call_id = str(raw.get("id") or "")
    if isinstance(arguments, dict) or arguments is None:
        return {"id": call_id, "name": function["name"], "arguments": arguments or {}}
    if not isinstance(arguments, str):
        raise refusal(path, where, "a tool call's arguments are neither JSON text nor an object")
    try:
        decoded = json.loads(arguments)
    except (ValueError, RecursionError):
        decoded = None
    shallow = arguments.count("{") + arguments.count("[") <= MAX_DEPTH  # fewer cannot nest deeper
    if isinstance(decoded, dict) and (shallow or depth(decoded) <= MAX_DEPTH):
        return {"id": call_id, "name": function["name"], "arguments": decoded}
    return {"id": call_id, "name": function["name"], "arguments": None, "raw_arguments": arguments}


def message_of(path: Path, where: str, raw: Any) -> dict[str, Any]:
    """One chat message of the OpenAI shape as the fields of a ``Message`` (what it gives, the rest left
    to the defaults); a wrong shape is refused in words."""
    if not isinstance(raw, dict):
        raise refusal(path, where, f"a message is {type(raw).__name__}, not an object")
    said_role = raw.get("role")
    role = ROLES.get(said_role) if isinstance(said_role, str) else None
    if role is None:
        raise refusal(path, where, f"a message's role is {str(raw.get('role'))[:40]!r}, not a chat role")
    fields: dict[str, Any] = {"role": role, "content": _text(path, where, raw.get("content"))}
    calls = raw.get("tool_calls")
    if calls and role == "assistant":
        if not isinstance(calls, list):
            raise refusal(path, where, "a message's tool_calls is not a list")
        fields["tool_calls"] = [_call(path, where, call) for call in calls]
    reasoning = raw.get("reasoning_content") or raw.get("reasoning")
    if isinstance(reasoning, str):
        fields["reasoning"] = reasoning
    call_id, name = raw.get("tool_call_id"), raw.get("name")
    if role == "tool" and call_id is not None:
        fields["tool_call_id"] = str(call_id)
    if isinstance(name, str):
        fields["name"] = name
    if raw.get("is_error") is True:
        fields["is_error"] = True
    return fields


def _split(path: Path, item: Outside, messages: list[Message]) -> tuple[str, list[Message], list[Message]]:
    """(instructions, history, trajectory): the leading system messages are the instructions; the last
    user message is the run's input, its trajectory starting there, what came before its history."""
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if last is None:
        raise refusal(path, item.where, "it has no user message, so there is no input to grade a run on")
    instructions = "\n\n".join(m.content for m in messages[:lead])
    return instructions, bounded(messages[lead:last]), bounded(messages[last:])


def _strings(value: Any) -> list[str]:
    """Every string inside JSON-shaped ``value``, keys left out, found without recursion."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # JSON's own types: no subclass to look for
        if kind is str:
            found.append(item)
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return found


def redacted(redactor: Redactor, value: Any) -> Any:
    """``value`` with its secrets redacted: screened first as one text (its distinct strings a line
    each), which a secret in any of them makes differ, and redacted string by string only then, so the
    common case of no secret costs one pass, not one a string."""
    return redactor.data(value) if redactor.finds("\n".join(set(_strings(value)))) else value


def run_of(path: Path, item: Outside, machine: str, harness: str, redactor: Redactor) -> Run:
    """``item`` as an observed run of ``machine``: unlabelled, its secrets redacted, its text bounded."""
    if len(item.messages) > MAX_MESSAGES:
        raise refusal(path, item.where, f"it holds {len(item.messages):,} messages, over {MAX_MESSAGES:,}")
    said = redacted(redactor, item.messages)  # arguments as the JSON text they came as: "password": ...
    try:
        messages = MESSAGES.validate_python([message_of(path, item.where, raw) for raw in said])
    except ValidationError as error:  # what message_of let through and a message cannot hold
        raise refusal(path, item.where, f"a message is out of shape ({error.errors()[0]['msg']})") from None
    instructions, history, trajectory = _split(path, item, messages)
    size = len(instructions) + sum(len(m.content) + len(m.reasoning or "") for m in [*history, *trajectory])
    if size > MAX_RUN_TEXT:
        over = f"it holds {size:,} characters of text, over the {MAX_RUN_TEXT:,} a run may"
        raise refusal(path, item.where, over)
    replies = [m.content for m in trajectory if m.role == "assistant" and m.content]
    output = redactor.text(item.output) if item.output else (replies[-1] if replies else "")
    given: dict[str, Any] = {  # only what the item says: the rest are the run's defaults, made faster
        "usage": item.usage,
        "error": redactor.text(item.error) if item.error else None,
        "case_id": item.case_id,
        "case": redactor.data(item.case) if item.case is not None else None,
        "trial": item.trial,
        "conversation_id": item.conversation_id,
    }
    if item.started_at is not None or item.finished_at is not None:
        started = {} if item.started_at is None else {"started_at": item.started_at}
        given["timings"] = Timings(finished_at=item.finished_at, **started)
    return Run(
        machine=machine,
        model=item.model or "unknown",
        harness=harness,
        instructions=instructions,
        input=trajectory[0].content,
        history=history,
        trajectory=trajectory,
        output=output,
        status="error" if item.error else "ok",
        observed=True,
        **{key: value for key, value in given.items() if value is not None},
    )
