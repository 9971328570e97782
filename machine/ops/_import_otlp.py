"""OpenTelemetry traces in: the OTLP/JSON encoding (``{"resourceSpans": [{"scopeSpans": [{"spans":
[...]}]}]}``, one document, or one a line as the collector's file exporter writes them) of spans under the
GenAI semantic conventions. A run a trace: its root ``invoke_agent`` span, or each ``chat`` span where
no agent span is. The messages come from ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
``gen_ai.output.messages`` (attributes, or the attributes of the span's event that carries them), or
from the older ``gen_ai.prompt`` and ``gen_ai.completion`` (as events, or flattened as
``gen_ai.prompt.0.role``); the model from the response's or request's model; tokens from
``gen_ai.usage.*``. A trace recorded without content (the conventions' default) has no messages: it is
passed over and counted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from machine.budget import Usage
from machine.errors import BadInputError

from ._import_read import MAX_IMPORT_RUNS, Outside, parsed_json, refusal

AGENT, CHATS = "invoke_agent", ("chat", "text_completion", "generate_content")
"""The operations (``gen_ai.operation.name``) a run is made of: an agent's whole turn, a model call."""
Span = dict[str, Any]


def _value(raw: Any) -> Any:
    """An OTLP ``AnyValue`` as plain data (an int64 is a string in OTLP/JSON)."""
    if not isinstance(raw, dict):
        return None
    if "stringValue" in raw:
        return raw["stringValue"]
    if "intValue" in raw:
        try:
            return int(raw["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in raw:
        return [_value(v) for v in _items(raw["arrayValue"], "values")]
    if "kvlistValue" in raw:
        return _attributes(_items(raw["kvlistValue"], "values"))
    return raw.get("doubleValue", raw.get("boolValue"))


def _attributes(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, list):
        return {}
    return {
        a["key"]: _value(a.get("value")) for a in raw if isinstance(a, dict) and isinstance(a.get("key"), str)
    }


def _items(value: Any, key: str) -> list[Any]:
    """``value[key]`` where ``value`` is an object holding a list there; else nothing."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, list) else []


def _plain(span: dict[str, Any]) -> Span:
    """``span`` with its attributes and its events' attributes made plain data."""
    events = [e for e in _items(span, "events") if isinstance(e, dict)]
    return {
        **span,
        "attributes": _attributes(span.get("attributes")),
        "events": [{**e, "attributes": _attributes(e.get("attributes"))} for e in events],
    }


def spans_of(path: Path, documents: list[Any]) -> list[Span]:
    """Every span of ``documents``, its attributes and its events' attributes made plain data."""
    found: list[Span] = []
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
            raise refusal(
                path, f"document {number}", 'it is not OTLP/JSON traces: it has no "resourceSpans" list'
            )
        for batch in document["resourceSpans"]:
            for scope in _items(batch, "scopeSpans"):
                spans = _items(scope, "spans")
                found += [
                    _plain(s) for s in spans if isinstance(s, dict) and isinstance(s.get("traceId"), str)
                ]
    return found


def _operation(span: Span) -> str:
    said = span["attributes"].get("gen_ai.operation.name")
    return said if isinstance(said, str) else str(span.get("name") or "").split(" ")[0]


def _said(path: Path, where: str, value: Any) -> Any:
    """An attribute that holds JSON: as text (parsed, bounded) or already as data."""
    return parsed_json(path, value, where) if isinstance(value, str) else value


def _parts(parts: Any) -> dict[str, Any]:
    """A GenAI message's parts as the OpenAI chat shape's fields."""
    text, thought, calls = [], [], []
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text.append(str(part.get("content", "")))
        elif kind == "reasoning":
            thought.append(str(part.get("content", "")))
        elif kind == "tool_call":
            arguments = part.get("arguments")
            function = {"name": str(part.get("name", "")), "arguments": arguments}
            calls.append({"id": str(part.get("id") or ""), "type": "function", "function": function})
    return {"content": "\n".join(text), "reasoning_content": "\n".join(thought) or None, "tool_calls": calls}


def _messages(messages: Any) -> list[dict[str, Any]]:
    """GenAI messages (``{"role", "parts"}``) as OpenAI chat messages; one already of the chat shape
    (``{"role", "content"}``, as ``gen_ai.prompt`` held) is kept as it is."""
    said: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or "parts" not in message:
            said.append(message)
            continue
        answers = [
            p
            for p in _items(message, "parts")
            if isinstance(p, dict) and p.get("type") == "tool_call_response"
        ]
        for part in answers:
            response = part.get("response")
            content = response if isinstance(response, str) else json.dumps(response)
            said.append({"role": "tool", "tool_call_id": str(part.get("id") or ""), "content": content})
        if not answers or message.get("role") != "tool":
            said.append({"role": message.get("role"), **_parts(message["parts"])})
    return said


def _older(path: Path, where: str, value: Any, role: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt`` or ``gen_ai.completion``: chat messages as JSON, or plain text of ``role``."""
    if value is None:
        return []
    if isinstance(value, str) and not value.lstrip().startswith(("[", "{")):
        return [{"role": role, "content": value}]
    said = _said(path, where, value)
    return _messages(said if isinstance(said, list) else [said])


def _flattened(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt.0.role``, ``gen_ai.prompt.0.content``, …: the messages flattened into attributes."""
    said = []
    for index in range(MAX_IMPORT_RUNS):
        role = attributes.get(f"{prefix}.{index}.role")
        if role is None:
            break
        said.append({"role": role, "content": attributes.get(f"{prefix}.{index}.content") or ""})
    return said


def conversation(path: Path, where: str, span: Span) -> list[dict[str, Any]]:
    """The messages a span recorded (its system instructions, input and output), in the chat shape."""
    found = dict(span["attributes"])
    for event in span["events"]:
        found.update({k: v for k, v in event["attributes"].items() if k.startswith("gen_ai.")})
    system = _parts(_said(path, where, found.get("gen_ai.system_instructions")))["content"]
    said = [{"role": "system", "content": system}] if system else []
    if "gen_ai.input.messages" in found or "gen_ai.output.messages" in found:
        said += _messages(_said(path, where, found.get("gen_ai.input.messages")))
        return said + _messages(_said(path, where, found.get("gen_ai.output.messages")))
    prompt, completion = found.get("gen_ai.prompt"), found.get("gen_ai.completion")
    if prompt is not None or completion is not None:
        said += _older(path, where, prompt, "user")
        return said + _older(path, where, completion, "assistant")
    return said + _flattened(found, "gen_ai.prompt") + _flattened(found, "gen_ai.completion")


def _nanos(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value) / 1e9, UTC) if value else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _count(attributes: dict[str, Any], *names: str) -> int:
    found = next((attributes[n] for n in names if isinstance(attributes.get(n), int)), 0)
    return max(found, 0)


def _usage(spans: list[Span]) -> Usage | None:
    """Tokens the spans reported (``gen_ai.usage.*``), all together; None when none did."""
    total, reported = Usage(), False
    for span in spans:
        a = span["attributes"]
        reported = reported or any(k.startswith("gen_ai.usage.") for k in a)
        total += Usage(
            input_tokens=_count(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            cached_input_tokens=_count(a, "gen_ai.usage.cache_read.input_tokens"),
            output_tokens=_count(a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        )
    return total if reported else None


def _model(spans: list[Span]) -> str | None:
    for span in spans:
        a = span["attributes"]
        model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
        if isinstance(model, str) and model:
            return model
    return None


def _run(path: Path, span: Span, calls: list[Span]) -> Outside:
    """The run of ``span`` (an agent's or a model call's), with the model calls made inside it."""
    where = f"trace {span['traceId'][:32]}, span {str(span.get('spanId', ''))[:16]}"
    messages = conversation(path, where, span)
    if not any(m.get("role") != "system" for m in messages) and calls:
        messages = conversation(path, where, calls[-1])  # the last call's input holds every turn before it
    found = span.get("status")
    status: dict[str, Any] = found if isinstance(found, dict) else {}
    failed = status.get("code") in (2, "STATUS_CODE_ERROR")
    conversation_id = span["attributes"].get("gen_ai.conversation.id")
    own = _usage([span])
    return Outside(
        where=where,
        messages=messages,
        model=_model([span, *reversed(calls)]),
        usage=own if own is not None else _usage(calls),
        error=(str(status.get("message") or "") or "the span ended in an error") if failed else None,
        conversation_id=conversation_id if isinstance(conversation_id, str) else None,
        started_at=_nanos(span.get("startTimeUnixNano")),
        finished_at=_nanos(span.get("endTimeUnixNano")),
    )


def _inside(span: Span, ancestor: Span, parents: dict[str, Span]) -> bool:
    seen, at = 0, span
    while at.get("parentSpanId") and seen < len(parents):
        at, seen = parents.get(at["parentSpanId"], {}), seen + 1
        if at is ancestor:
            return True
    return False


def trace_runs(path: Path, documents: list[Any]) -> Iterator[Outside | str]:
    """A run of each trace's root agent spans, else of its model calls; a trace with neither, or with
    no messages recorded, is said in words (passed over)."""
    traces: dict[str, list[Span]] = {}
    for span in spans_of(path, documents):
        traces.setdefault(span["traceId"], []).append(span)
    for trace, spans in traces.items():
        spans.sort(
            key=lambda s: (
                int(s.get("startTimeUnixNano") or 0)
                if str(s.get("startTimeUnixNano") or "0").isdigit()
                else 0
            )
        )
        by_id = {str(s.get("spanId")): s for s in spans}
        agents = [s for s in spans if _operation(s) == AGENT]
        calls = [s for s in spans if _operation(s) in CHATS]
        roots = [a for a in agents if not any(_inside(a, b, by_id) for b in agents if b is not a)]
        made = [_run(path, a, [c for c in calls if _inside(c, a, by_id)]) for a in roots] or [
            _run(path, c, []) for c in calls
        ]
        if not made:
            yield f"trace {trace[:32]} has no GenAI agent or model-call span"
        for outside in made:
            if any(m.get("role") != "system" for m in outside.messages):
                yield outside
            else:
                yield f"{outside.where} recorded no messages (its tracer did not capture content)"


def otlp_documents(path: Path, text: str) -> list[Any]:
    """The OTLP/JSON documents of ``text``: one, or one a line."""
    try:
        return [parsed_json(path, text, "")]
    except BadInputError:
        if "\n" not in text.strip():
            raise
    return [
        parsed_json(path, line, f"line {n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()
    ]
