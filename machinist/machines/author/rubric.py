"""What the author is graded on: its reply carries what was asked in the blocks that are read."""

from machine.grade import define_rubric

rubric = define_rubric(
    {
        "in_blocks": {
            "description": (
                "The reply carries its work in the blocks asked for: files as <file path=...>, cases as "
                "<case>, topics as <topic>."
            ),
            "weight": 1,
        },
    }
)
