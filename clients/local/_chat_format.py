"""How a local model sees a run, and how its reply is read back: one rendering, shared by the local
harness (which samples) and the local trainer (which learns), so a model is trained on exactly the
format it is later asked to use.

Most small chat templates (SmolLM2's ChatML among them) know nothing of tools, so tools are offered in
the system prompt, in one format (``FORMAT``), whatever the template:

- The system message is the run's instructions, then a ``# Tools`` section: a fenced ``json`` block with
  one ``{"name", "description", "parameters"}`` object a line (``parameters`` is the tool's JSON schema)
  and the rule for calling one.
- The model calls a tool by writing, on a line of its own,
  ``<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>``; several such lines call several tools.
  The text outside those blocks is the reply's text.
- An assistant turn with tool calls is rendered back the same way: its text, then one block per call.
- Tool results go back as ONE user message per batch of results (every chat template supports the user
  role, and strict templates want user and assistant turns to alternate), one block per result:
  ``<tool_response name="NAME">`` newline, the result, newline, ``</tool_response>``.
- Reasoning is not rendered (the local models named here do not think out loud).

A call that cannot be read (not JSON, no name, arguments that are not an object) is kept as a ToolCall
with ``arguments=None`` and the text it sent as ``raw_arguments``: the agent loop answers it with a tool
error the model sees, as the remote harnesses do. Pure Python, so ``machine.runs`` stays free of torch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from machine.runs import ToolCall

FORMAT = "machine-tools-v1"
"""The name of this rendering (a training record names the renderer its examples were rendered with)."""

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESPONSE_CLOSE = "</tool_response>"

_CALL = re.compile(re.escape(CALL_OPEN) + r"(.*?)(?:" + re.escape(CALL_CLOSE) + r"|\Z)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*(.*)', re.DOTALL)


def functions_of(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools as ``{"name", "description", "parameters"}``, from either that shape or the chat-completions
    one (``{"type": "function", "function": {...}}``)."""
    found = []
    for tool in tools:
        spec = tool.get("function", tool) if tool.get("type") == "function" else tool
        found.append(
            {
                "name": spec["name"],
                "description": spec.get("description", ""),
                "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
            }
        )
    return found


def tools_section(tools: Sequence[Mapping[str, Any]]) -> str:
    """The part of the system prompt that offers ``tools`` and says how to call them ("" for none)."""
    if not tools:
        return ""
    listed = "\n".join(json.dumps(f, ensure_ascii=False) for f in functions_of(tools))
    return (
        "# Tools\n\n"
        "You can call these tools (name, what it does, and the JSON schema of its arguments):\n\n"
        f"```json\n{listed}\n```\n\n"
        "To call a tool, write a line of its own, exactly:\n"
        f'{CALL_OPEN}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CALL_CLOSE}\n'
        "Write one such line per call. Each result comes back in a <tool_response> block. "
        "When you need no tool, answer in plain text."
    )


def system_prompt(instructions: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The instructions, then the tools section (either may be empty)."""
    return "\n\n".join(part for part in (instructions.strip(), tools_section(tools)) if part)


def render_call(name: str, arguments: str) -> str:
    """One call as the model writes it; ``arguments`` is JSON text (put in verbatim, as it was sent)."""
    return (
        f'{CALL_OPEN}{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {arguments}}}{CALL_CLOSE}'
    )


def _assistant(message: Mapping[str, Any]) -> str:
    lines = [message["content"]] if message.get("content") else []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        lines.append(render_call(function["name"], function.get("arguments") or "{}"))
    return "\n".join(lines)


def _response(name: str, content: str) -> str:
    return f'<tool_response name="{name}">\n{content}\n{RESPONSE_CLOSE}'


def chat_messages(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, str]]:
    """Chat-completions messages (``to_openai``'s shape: system first, assistant tool calls, tool results)
    as plain ``{"role", "content"}`` messages any chat template renders: tools in the system prompt, calls
    as text, each run of tool results as one user message."""
    rendered: list[dict[str, str]] = []
    names: dict[str, str] = {}
    body = list(messages)
    instructions = ""
    if body and body[0].get("role") == "system":
        instructions = body.pop(0).get("content") or ""
    system = system_prompt(instructions, tools)
    if system:
        rendered.append({"role": "system", "content": system})
    results: list[str] = []
    for message in body:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id") or ""
            results.append(
                _response(message.get("name") or names.get(call_id, ""), message.get("content") or "")
            )
            continue
        if results:
            rendered.append({"role": "user", "content": "\n".join(results)})
            results = []
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                names[call.get("id", "")] = call["function"]["name"]
            rendered.append({"role": "assistant", "content": _assistant(message)})
        else:
            rendered.append({"role": str(role), "content": message.get("content") or ""})
    if results:
        rendered.append({"role": "user", "content": "\n".join(results)})
    return rendered


def _read_call(body: str) -> tuple[str, dict[str, Any] | None, str]:
    """A call's name, arguments (None when they cannot be read) and its arguments as the model wrote them."""
    text = body.strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        name = data.get("name")
        arguments = data.get("arguments", data.get("parameters"))
        if isinstance(arguments, str):  # arguments sent as a JSON string: read it, keep it if it is not
            try:
                decoded = json.loads(arguments)
            except json.JSONDecodeError:
                decoded = None
            raw = arguments
            arguments = decoded
        else:
            raw = json.dumps(arguments, ensure_ascii=False) if arguments is not None else text
        if isinstance(name, str) and name and isinstance(arguments, dict):
            return name, arguments, raw
        return name if isinstance(name, str) else "", None, raw
    named = _NAME.search(text)
    given = _ARGUMENTS.search(text)
    raw = given.group(1).strip() if given else text
    if given and raw.endswith("}"):
        raw = raw[:-1].rstrip()  # the closing brace of the call itself
    return (named.group(1) if named else ""), None, raw


def parse_reply(text: str, *, id_prefix: str = "call") -> tuple[str, list[ToolCall]]:
    """A reply's text (outside the call blocks) and its tool calls, ids ``{id_prefix}_{n}``; a call that
    cannot be read has ``arguments=None`` and what it sent in ``raw_arguments``."""
    calls: list[ToolCall] = []
    for index, found in enumerate(_CALL.finditer(text)):
        name, arguments, raw = _read_call(found.group(1))
        calls.append(
            ToolCall(
                id=f"{id_prefix}_{index}",
                name=name or "unnamed_call",
                arguments=arguments,
                raw_arguments=None if arguments is not None else raw,
            )
        )
    content = _CALL.sub("", text)
    content = "\n".join(line.rstrip() for line in content.splitlines() if line.strip() or not calls)
    return content.strip(), calls


def prompt_text(
    tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The prompt a local model continues: ``messages`` rendered by ``chat_messages`` through the
    tokenizer's own chat template, ending where the assistant's next turn begins."""
    text: str = tokenizer.apply_chat_template(
        chat_messages(messages, tools), tokenize=False, add_generation_prompt=True
    )
    return text
