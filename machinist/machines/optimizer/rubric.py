"""What the optimizer is graded on: its reply must carry one proposal, and say why it is one."""

from machine.grade import define_rubric

rubric = define_rubric(
    {
        "proposes": {
            "description": (
                "The reply carries one non-empty rewrite of the instructions between <instructions> and "
                "</instructions>."
            ),
            "weight": 3,
        },
        "explains": {
            "description": "Outside the block, the reply says what it changed and why.",
            "weight": 1,
        },
    }
)
