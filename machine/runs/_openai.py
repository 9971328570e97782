"""Runs in the OpenAI chat-completions shape: what the chat harnesses send a model, and what an exported
training example holds, written once so the two cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._records import Message
from ._tools import Tool


def to_openai(
    instructions: str, messages: Sequence[Message], *, send_reasoning: bool
) -> list[dict[str, Any]]:
    """``messages`` in the chat-completions format, the instructions as the system message; an assistant
    turn's reasoning goes in ``reasoning_content`` when ``send_reasoning``."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for m in messages:
        if m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments
                            if c.raw_arguments is not None
                            else json.dumps(c.arguments or {}),
                        },
                    }
                    for c in m.tool_calls
                ]
            if send_reasoning and m.reasoning:
                item["reasoning_content"] = m.reasoning
            wire.append(item)
        elif m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def openai_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools as chat-completions functions."""
    return [{"type": "function", "function": t.function()} for t in tools]
