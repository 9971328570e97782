"""wordmath is graded on one thing: the final answer."""

from machine import define_rubric

rubric = define_rubric(
    {
        "correct": {
            "description": "The last number on the reply's last non-empty line is the correct answer.",
            "weight": 1,
        },
    }
)
