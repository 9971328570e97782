"""What dates is graded on: the right day, and the one way of writing it that a program can read."""

from machine import define_rubric

rubric = define_rubric(
    {
        "correct": {
            "description": "The last line of the reply names the day the question asks for.",
            "weight": 2,
        },
        "iso": {
            "description": "The last line is that date alone, written as YYYY-MM-DD.",
            "weight": 1,
        },
    }
)
