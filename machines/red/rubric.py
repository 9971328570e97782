"""What the red machine is graded on: one rule, decided from the input and the tool calls."""

from machine import define_rubric

rubric = define_rubric(
    {
        "calls_when_red": {
            "description": (
                "Calls red_mentioned exactly once when the user's message contains 'red' as a discrete word "
                "(any case, with no letter or digit directly on either side), and never calls it otherwise."
            ),
            "weight": 1,
        },
    }
)
