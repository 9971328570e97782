"""What julia/fast adds: the program times its work and is written for speed."""

from machine import define_rubric

rubric = define_rubric(
    {
        "timed": {
            "description": (
                "The program it ran last times its work in code (not in a comment or a string): Base's "
                "`@time`, `@timev`, `@timed` or `@elapsed`, BenchmarkTools' `@btime`, `@belapsed` or "
                "`@benchmark`, or a `time_ns()` stopwatch."
            ),
            "weight": 1,
        },
        "written_for_speed": {
            "description": (
                "The program is written for speed: the hot code is inside functions and type-stable, it "
                "avoids untyped globals and needless allocation (preallocating, working in place, using "
                "views), uses a fitting algorithm and data structure, and times the work after a warm-up "
                "call so that compilation is not what is measured; the timing in the output is plausible "
                "for the task."
            ),
            "weight": 1,
        },
    }
)
