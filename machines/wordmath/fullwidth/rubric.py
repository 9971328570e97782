"""What wordmath/fullwidth adds to its parent: reasoning written in fullwidth letters and digits."""

from machine import define_rubric

rubric = define_rubric(
    {
        "fullwidth_reasoning": {
            "description": (
                "The captured reasoning is non-empty and writes every letter and digit in fullwidth form "
                "(U+FF10..FF19, U+FF21..FF3A, U+FF41..FF5A): no ASCII letter or digit appears in it."
            ),
            "weight": 1,
        },
    }
)
