"""What assistant is graded on: helpful and grounded answers (judged), dev's acts_on_request (judged),
and a short reply (checked)."""

from machine import define_rubric

from ..dev.rubric import ACTS_ON_REQUEST

MAX_WORDS = 200

rubric = define_rubric(
    {
        "helpful": {
            "description": (
                "The reply gives the person what they needed: it answers the question or does the task "
                "correctly and completely, or, when that is impossible (a refused or failed fetch, a "
                "missing file), says so plainly and offers the nearest useful thing."
            ),
            "weight": 2,
        },
        "grounded": {
            "description": (
                "Every claim about a file, a page or a command's output matches what the tool results "
                "actually show, and names its source (the file path or the URL). Nothing is presented as "
                "read or fetched that was not. General knowledge needs no tool, but must not be passed "
                "off as coming from a page or file."
            ),
            "weight": 1,
        },
        "acts_on_request": {"description": ACTS_ON_REQUEST, "weight": 1},
        "concise": {
            "description": f"The final reply has between 1 and {MAX_WORDS} words; an empty reply scores 0.",
            "weight": 1,
        },
    }
)
