"""What julia/inline adds: only short-form or @inline functions."""

from machine import define_rubric

rubric = define_rubric(
    {
        "short_or_inline": {
            "description": (
                "The program it ran last defines at least one named function, and every function it "
                "defines is in short form (`f(x) = ...`) or marked `@inline` (before a "
                "`function ... end` block, or as the first line of its body); a `function ... end` block "
                "without `@inline`, or any `@noinline`, fails. Anonymous `x -> ...` functions and `do` "
                "blocks do not count against it."
            ),
            "weight": 1,
        },
    }
)
