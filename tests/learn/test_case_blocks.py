"""An author's reply read for its <case> blocks: each one JSON object, anything else named in a sentence."""

from __future__ import annotations

import json

from machine.learn import read_cases
from machine.learn._case_blocks import MAX_CASE_CHARS, MAX_CASES


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
