"""What signoff is graded on: every reply ends with its sign-off, after an answer."""

from machine import define_rubric

rubric = define_rubric(
    {
        "signs_off": {
            "description": 'The reply answers, then ends with "Aye!" (nothing after it).',
            "weight": 1,
        },
    }
)
