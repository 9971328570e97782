"""What every Julia machine is graded on; the children add their specialties to these."""

from machine import define_rubric

rubric = define_rubric(
    {
        "runs": {
            "description": (
                "A run_julia call ran the program and it exited with code 0, as the tool result shows."
            ),
            "weight": 1,
        },
        "does_task": {
            "description": (
                "The program's actual output, as shown in the run_julia results, does what the task asks, "
                "completely and correctly. Judge the printed output, not the reply's claims about it."
            ),
            "weight": 2,
        },
        "idiomatic": {
            "description": (
                "The program is idiomatic Julia: its work is in functions rather than global scripts, it "
                "uses multiple dispatch, broadcasting, comprehensions and Base or standard-library "
                "functions where they fit, follows Julia's naming (lowercase functions, CamelCase types, "
                "a trailing ! for functions that mutate), and does not write Python or C in Julia syntax."
            ),
            "weight": 1,
        },
    }
)
