"""assistant: a general-purpose assistant in the folder it is started in.

It has dev's file tools and run (isolated: no network, only the folder) plus web_fetch, which runs in
the machine's process and refuses local and private addresses. There is no search tool: no web search
API is configured. It is a sibling of dev, not a child: dev's ``verified`` and ``stayed_on_task`` are
about code, so assistant shares only dev's ``acts_on_request`` (the same description, judged).
Helpfulness and grounding take judgement; length is counted.
"""

from __future__ import annotations

from machine import Run, check, define_evaluator, define_machine, instructions_from, judge, model_from
from machine.sandboxes.tools import (
    edit_file,
    list_files,
    read_file,
    run,
    search_files,
    web_fetch,
    write_file,
)

from .rubric import MAX_WORDS, rubric


def word_count(text: str) -> int:
    return len(text.split())


def concise(run: Run) -> tuple[bool, str]:
    """Between 1 and MAX_WORDS words; an empty reply scores 0."""
    words = word_count(run.output)
    if words == 0:
        return False, "the reply is empty"
    if words > MAX_WORDS:
        return False, f"{words} words; at most {MAX_WORDS}"
    return True, f"{words} words"


machine = define_machine(
    name="assistant",
    intent=(
        "Answer questions, look things up on the web, read and write files and run commands in the "
        "folder it is started in, saying where each fact came from."
    ),
    instructions=instructions_from(__file__),
    model=model_from(__file__, "Qwen/Qwen3.8-27B"),
    rubric=rubric,
    evaluator=define_evaluator(
        rubric,
        {
            "helpful": judge(),
            "grounded": judge(),
            "acts_on_request": judge(),
            "concise": check("words", concise),
        },
    ),
    tools=[list_files, search_files, read_file, write_file, edit_file, run, web_fetch],
    max_steps=12,
)
