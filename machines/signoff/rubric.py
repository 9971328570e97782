"""What signoff is graded on: every reply ends with its sign-off, after an answer that is right."""

from machine import define_rubric

rubric = define_rubric(
    {
        "signs_off": {
            "description": 'The reply answers, then ends with "Aye!" (nothing after it).',
            "weight": 1,
        },
        "answers": {
            "description": "The answer is right: it says what the case expects, and nothing it rules out.",
            "weight": 1,
        },
    }
)
