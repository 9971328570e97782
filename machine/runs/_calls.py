"""What a model's turn may put into a run, bounded before anything acts on it or keeps it.

A model (or the endpoint that speaks for it) controls its tool calls' names, ids and arguments and the
text it writes, and a tool controls its result; any of them can be megabytes long. The agent loop keeps
each within a bound, and what a host reported (opencode, pi) is kept to the same bounds before it is
stored, so no run, event or page grows with what a model chose to send:

- a tool name past ``MAX_TOOL_NAME`` characters, or one that is not the machine's, is refused (the model
  sees a tool error) and kept cut; so are the calls of one turn past ``MAX_CALLS_A_TURN``;
- a call's arguments past ``MAX_ARGUMENTS`` characters of JSON are refused and kept cut; an id past
  ``MAX_ID`` is replaced by a short one derived from it;
- a tool's result, and an assistant turn's text and reasoning, are cut at ``MAX_RESULT`` and
  ``MAX_TEXT`` characters, saying so;
- a run whose trajectory passes ``MAX_RUN_TEXT`` characters stops there, as a failed run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence

from pydantic_core import to_json

from ._records import Message, ToolCall

MAX_TOOL_NAME = 64
"""Characters of a tool's name (the longest OpenAI-style function name)."""
MAX_ID = 128
"""Characters of a tool call's id."""
MAX_CALLS_A_TURN = 16
"""Tool calls one turn may make; those past it are refused."""
MAX_ARGUMENTS = 128 * 1024
"""Characters of one call's arguments, as JSON."""
MAX_RESULT = 64 * 1024
"""Characters of one tool result the model is given and the run keeps."""
MAX_TEXT = 128 * 1024
"""Characters of an assistant turn's text, and of its reasoning, a run keeps."""
MAX_RUN_TEXT = 4 * 1024 * 1024
"""Characters of text (every message's content, reasoning and calls) a run may hold; past it, it stops."""
SHOWN = 48
"""Characters of a refused name or arguments kept, to say what was sent."""


def cut(text: str, most: int) -> str:
    """``text`` cut to at most ``most`` characters, saying how long it was."""
    if len(text) <= most:
        return text
    kept = max(most - 80, 0)  # room for the note
    return f"{text[:kept]}… [cut: {len(text):,} characters, of which {kept:,} are kept]"


def _brief(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text):,} characters)"


def _short_id(call_id: str) -> str:
    return "call_" + hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()[:24]


def _arguments_size(call: ToolCall) -> int:
    """The characters of the call's arguments as compact JSON (UTF-8 bytes: a bound, measured quickly)."""
    if call.raw_arguments is not None:
        return len(call.raw_arguments)
    return len(to_json(call.arguments)) if call.arguments is not None else 0


def _refusal(call: ToolCall, index: int, tools: Collection[str]) -> str | None:
    """Why ``call`` (the ``index``-th of its turn) is refused before it runs, or None."""
    if index >= MAX_CALLS_A_TURN:
        return f"refused: a turn may make at most {MAX_CALLS_A_TURN} tool calls; make the rest in the next"
    if len(call.name) > MAX_TOOL_NAME or call.name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        return f"there is no tool named {_brief(call.name)!r}; the tools are: {known}"
    size = _arguments_size(call)
    if size > MAX_ARGUMENTS:
        return (
            f"the arguments of {call.name} are {size:,} characters of JSON, over the {MAX_ARGUMENTS:,} a "
            "call may send: send less at a time"
        )
    return None


def _kept_call(call: ToolCall, refused: bool) -> ToolCall:
    """``call`` as the run keeps it: a long id made short; a refused call's name and arguments in brief."""
    update: dict[str, object] = {}
    if len(call.id) > MAX_ID:
        update["id"] = _short_id(call.id)
    if refused:
        update["name"] = _brief(call.name)
        if _arguments_size(call) > SHOWN:
            raw = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
            update |= {"arguments": None, "raw_arguments": _brief(raw)}
    return call.model_copy(update=update) if update else call


def checked_turn(message: Message, tools: Collection[str]) -> tuple[Message, dict[str, str]]:
    """An assistant turn as the run keeps it (its text cut, each call checked and kept in bounds), and
    the calls refused before they run: their ids (as kept) and why, which the model is told."""
    refused: dict[str, str] = {}
    calls: list[ToolCall] = []
    for index, call in enumerate(message.tool_calls):
        why = _refusal(call, index, tools)
        kept = _kept_call(call, why is not None)
        if why is not None:
            refused[kept.id] = why
        calls.append(kept)
    update: dict[str, object] = {}
    if any(kept is not call for kept, call in zip(calls, message.tool_calls, strict=True)):
        update["tool_calls"] = calls
    if len(message.content) > MAX_TEXT:
        update["content"] = cut(message.content, MAX_TEXT)
    if message.reasoning is not None and len(message.reasoning) > MAX_TEXT:
        update["reasoning"] = cut(message.reasoning, MAX_TEXT)
    return (message.model_copy(update=update) if update else message), refused


def kept_result(message: Message) -> Message:
    """A tool's result as the model is given it and the run keeps it: cut at ``MAX_RESULT``."""
    update: dict[str, object] = {}
    if len(message.content) > MAX_RESULT:
        update["content"] = cut(message.content, MAX_RESULT)
    if message.tool_call_id is not None and len(message.tool_call_id) > MAX_ID:
        update["tool_call_id"] = _short_id(message.tool_call_id)
    if message.name is not None and len(message.name) > MAX_TOOL_NAME:
        update["name"] = _brief(message.name)
    return message.model_copy(update=update) if update else message


def text_size(messages: Sequence[Message]) -> int:
    """The characters of text ``messages`` hold: contents, reasoning, calls' names, ids and arguments."""
    size = 0
    for m in messages:
        size += len(m.content) + len(m.reasoning or "")
        size += sum(len(c.name) + len(c.id) + _arguments_size(c) for c in m.tool_calls)
    return size


def within_bounds(message: Message) -> bool:
    """Whether the loop's bounds leave ``message`` as it is (``checked_turn`` for its own tools and
    ``kept_result`` would change nothing): a question asked of every message a host reports, so that
    the common one costs no copy."""
    if message.role == "tool":
        return (
            len(message.content) <= MAX_RESULT
            and len(message.tool_call_id or "") <= MAX_ID
            and len(message.name or "") <= MAX_TOOL_NAME
        )
    if message.role != "assistant":
        return True
    calls = message.tool_calls
    return (
        len(message.content) <= MAX_TEXT
        and len(message.reasoning or "") <= MAX_TEXT
        and len(calls) <= MAX_CALLS_A_TURN
        and all(
            len(c.name) <= MAX_TOOL_NAME and len(c.id) <= MAX_ID and _arguments_size(c) <= MAX_ARGUMENTS
            for c in calls
        )
    )


def bounded(messages: Sequence[Message]) -> list[Message]:
    """A trajectory a host reported, kept to the loop's bounds (its calls are not refused here: they ran
    already, in the host)."""
    kept: list[Message] = []
    for message in messages:
        if within_bounds(message):
            pass
        elif message.role == "assistant":
            message = checked_turn(message, {c.name for c in message.tool_calls})[0]
        else:
            message = kept_result(message)
        kept.append(message)
    return kept
