"""The local chat format: tools offered in the system prompt, calls and results rendered as text, and
replies read back into text and tool calls (malformed calls kept, for the loop to answer)."""

from __future__ import annotations

import json

from machine.clients.local._chat_format import FORMAT as LOCAL_CHAT_FORMAT
from machine.clients.local._chat_format import chat_messages as local_chat_messages
from machine.clients.local._chat_format import parse_reply as parse_local_reply
from machine.clients.local._chat_format import prompt_text as local_prompt_text
from machine.runs import Message, ToolCall, openai_tools, to_openai, tool


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def _conversation() -> list[Message]:
    return [
        Message(role="user", content="What is 1 + 2?"),
        Message(
            role="assistant",
            content="Adding.",
            reasoning="kept out of the prompt",
            tool_calls=[
                ToolCall(id="c0", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="c1", name="add", arguments=None, raw_arguments='{"a": 1,'),
            ],
        ),
        Message(role="tool", content="3", tool_call_id="c0", name="add"),
        Message(role="tool", content="bad JSON", tool_call_id="c1", name="add", is_error=True),
        Message(role="assistant", content="It is 3."),
    ]


def test_tools_are_offered_in_the_system_prompt_one_json_object_a_line() -> None:
    chat = local_chat_messages(to_openai("Be brief.", [], send_reasoning=False), openai_tools([add]))
    assert [m["role"] for m in chat] == ["system"]
    system = chat[0]["content"]
    assert system.startswith("Be brief.\n\n# Tools")
    listed = system.split("```json\n")[1].split("\n```")[0].splitlines()
    assert [json.loads(line) for line in listed] == [add.function()]
    assert '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>' in system
    assert LOCAL_CHAT_FORMAT == "machine-tools-v1"


def test_no_tools_and_no_instructions_leave_no_system_message() -> None:
    chat = local_chat_messages(to_openai("", [Message(role="user", content="hi")], send_reasoning=False))
    assert chat == [{"role": "user", "content": "hi"}]


def test_calls_render_as_the_model_writes_them_and_results_as_one_user_message() -> None:
    chat = local_chat_messages(to_openai("Sum.", _conversation(), send_reasoning=True), openai_tools([add]))
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user", "assistant"]
    assert chat[2]["content"] == (
        "Adding.\n"
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": {"a": 1,}</tool_call>'
    )
    assert "kept out of the prompt" not in json.dumps(chat)
    assert chat[3]["content"] == (
        '<tool_response name="add">\n3\n</tool_response>\n'
        '<tool_response name="add">\nbad JSON\n</tool_response>'
    )


def test_a_rendered_call_parses_back_to_the_same_call() -> None:
    chat = local_chat_messages(to_openai("", _conversation()[:2], send_reasoning=False))
    text, calls = parse_local_reply(chat[1]["content"], id_prefix="call_3")
    assert text == "Adding."
    assert calls[0] == ToolCall(id="call_3_0", name="add", arguments={"a": 1, "b": 2})
    assert calls[1].name == "add" and calls[1].arguments is None


def test_a_reply_without_calls_is_its_text() -> None:
    assert parse_local_reply("  Hello there.\n\nBye!  ") == ("Hello there.\n\nBye!", [])


def test_malformed_calls_are_kept_with_what_they_sent() -> None:
    reply = (
        "Trying.\n"
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": }}</tool_call>\n'
        '<tool_call>{"arguments": {"a": 1}}</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": {"a": 5'
    )
    text, calls = parse_local_reply(reply)
    assert text == "Trying."
    first, unnamed, stringly, listed, unclosed = calls
    assert (first.name, first.arguments, first.raw_arguments) == ("add", None, '{"a": 1, "b": }')
    assert unnamed.name == "unnamed_call" and unnamed.arguments is None
    assert stringly.arguments == {"a": 2, "b": 3} and stringly.raw_arguments is None
    assert listed.arguments is None and listed.raw_arguments == "[1, 2]"
    assert unclosed.name == "add" and unclosed.arguments is None and unclosed.raw_arguments == '{"a": 5'
    assert [c.id for c in calls] == [f"call_{n}" for n in range(5)]


class _Template:
    """A tokenizer's chat template, as far as the rendering uses it."""

    def apply_chat_template(self, messages: list[dict[str, str]], **options: object) -> str:
        assert options == {"tokenize": False, "add_generation_prompt": True}
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def test_the_prompt_goes_through_the_tokenizers_chat_template() -> None:
    prompt = local_prompt_text(_Template(), to_openai("Sum.", _conversation()[:1], send_reasoning=False))
    assert prompt == "<system>Sum.<user>What is 1 + 2?<assistant>"
