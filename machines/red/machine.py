"""red: a tiny tool-use probe. It must flag the word "red" with one tool call, and only that word.

The rule is exact and cheap to decide, so the whole rubric is one deterministic check; near misses
("bored", "Fred", "infrared", "red2") are where models slip.
"""

from __future__ import annotations

import re

from machine import Run, check, define_evaluator, define_machine, instructions_from, model_from, tool

from .rubric import rubric

TOOL_NAME = "red_mentioned"

# "red" in any case, with no letter or digit (in any script) directly before or after it.
# ``[^\W_]`` is a word character that is not an underscore: exactly what str.isalnum() accepts,
# so "red_zone" and "#red" count, while "Fred", "redo", "red2" and "éred" do not.
# machines/red/script.json uses this same pattern for its tool-calling rule; a test keeps them equal.
RED_WORD = r"(?i)(?<![^\W_])red(?![^\W_])"
_RED = re.compile(RED_WORD)


def mentions_red(text: str) -> bool:
    """Whether ``text`` holds "red" as a discrete word."""
    return _RED.search(text) is not None


@tool
def red_mentioned() -> str:
    """Call this once when the user's message contains the word "red" (any case). Takes no arguments."""
    return "noted: red was mentioned"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def calls_when_red(run: Run) -> tuple[bool, str]:
    """Exactly one red_mentioned call if the input mentions red, none if it does not."""
    calls = sum(1 for call in run.tool_calls if call.name == TOOL_NAME)
    if mentions_red(run.input):
        if calls == 1:
            return True, "called red_mentioned once; the message mentions red"
        return (
            False,
            f"called {TOOL_NAME} {_times(calls)}; the message mentions red, so it must be called once",
        )
    if calls == 0:
        return True, "did not call red_mentioned; the message does not mention red"
    return False, f"called {TOOL_NAME} {_times(calls)}; the message does not mention red as a word"


machine = define_machine(
    name="red",
    intent='Call the red_mentioned tool once when a message uses the word "red", and never otherwise.',
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"calls_when_red": check("red_rule", calls_when_red)}),
    tools=[red_mentioned],
    max_steps=3,
)
