"""Reading the tagged blocks a model answers in: the optimizer's proposal between its tags with the rest
its explanation, and the author's cases, one JSON object a block, each unreadable block named."""

from __future__ import annotations

import json

from machine.learn._replies import MAX_CASE_CHARS, MAX_CASES, read_topics
from machine.learn.optimize import Reply, read_reply
from machine.learn.specialize import read_cases


def test_the_block_is_the_proposal_and_the_rest_the_explanation() -> None:
    reply = read_reply("I made it louder.\n<instructions>\n  Shout.\n</instructions>\nThat is all.")
    assert reply == Reply(instructions="Shout.", explanation="I made it louder.\n \nThat is all.", blocks=1)


def test_the_last_non_empty_block_wins() -> None:
    text = "Draft: <instructions>Whisper.</instructions> Settled: <instructions>Shout.</instructions> done"
    reply = read_reply(text)
    assert (reply.instructions, reply.blocks) == ("Shout.", 2)
    assert reply.explanation == "Draft:   Settled:   done"


def test_empty_blocks_are_passed_over() -> None:
    reply = read_reply("<instructions>Shout.</instructions> then <instructions>\n \n</instructions>")
    assert (reply.instructions, reply.blocks) == ("Shout.", 2)
    assert read_reply("<instructions> </instructions>") == Reply(None, "", 1)


def test_tags_are_read_in_any_case_and_across_lines() -> None:
    reply = read_reply("<INSTRUCTIONS>\nLine one.\n\nLine two.\n</Instructions>")
    assert reply.instructions == "Line one.\n\nLine two."


def test_no_block_or_an_unclosed_one_proposes_nothing() -> None:
    assert read_reply("Just say it louder.") == Reply(None, "Just say it louder.", 0)
    unclosed = read_reply("Here: <instructions>Shout, and never stop")
    assert (unclosed.instructions, unclosed.blocks) == (None, 0)
    assert unclosed.explanation == "Here: <instructions>Shout, and never stop"
    assert read_reply("") == Reply(None, "", 0)


def block(value: object) -> str:
    return f"<case>{json.dumps(value)}</case>"


def test_the_objects_in_case_blocks_are_read_in_order() -> None:
    text = f"Topic one.\n{block({'input': 'a'})}\nand\n<CASE>\n{json.dumps({'input': 'b'})}\n</CASE>"
    assert read_cases(text) == ([{"input": "a"}, {"input": "b"}], [])


def test_blocks_that_are_not_one_object_are_named_with_where_they_start() -> None:
    text = "".join(
        [
            block({"input": "ok"}),
            '<case>{"input": }</case>',
            block([1, 2]),
            "<case> </case>",
            '<case>{"a": 1} {"b": 2}</case>',
        ]
    )
    cases, problems = read_cases(text)
    assert cases == [{"input": "ok"}]
    assert problems == [
        "case block 2 (at character 28) is not JSON: Expecting value at line 1 column 11",
        "case block 3 (at character 52) holds a JSON list, not one object",
        "case block 4 (at character 71) is empty",
        "case block 5 (at character 85) holds more than one JSON value: give each case a block of its own",
    ]


def test_sizes_are_bounded() -> None:
    big = block({"input": "x" * MAX_CASE_CHARS})
    cases, problems = read_cases(big + block({"input": "small"}))
    assert cases == [{"input": "small"}]
    assert problems == [
        f"case block 1 (at character 0) is {MAX_CASE_CHARS + 13:,} characters, over the 200,000 a case may be"
    ]
    many = "".join(block({"input": str(n)}) for n in range(MAX_CASES + 5))
    cases, problems = read_cases(many)
    assert len(cases) == MAX_CASES
    assert problems == [f"the reply has {MAX_CASES + 5} case blocks; only the first {MAX_CASES} were read"]


def test_too_deep_and_unclosed_blocks_are_refused() -> None:
    deep = "<case>" + '{"a": ' * 70 + "1" + "}" * 70 + "</case>"
    cases, problems = read_cases(deep + '<case>{"input": "cut off')
    assert cases == []
    assert problems[0] == "case block 1 (at character 0) nests more than 64 levels deep"
    assert problems[1].startswith("a <case> at character 504 has no </case>")


def test_a_topic_shows_what_a_reader_cannot_see_as_escapes() -> None:
    reply = "<topic>short\u200bnames</topic><topic>\u3164</topic><topic>caf\u00e9 names</topic>"
    assert read_topics(reply) == ["short\\u200bnames", "\\u3164", "caf\u00e9 names"]
