"""What coder is graded on: that it really wrote and ran a program, and that the program's output does
the task."""

from machine import define_rubric

rubric = define_rubric(
    {
        "ran_a_file": {
            "description": (
                "Wrote a file with write_file (the tool reported success) and afterwards ran it with run: a "
                "command that runs that file (not merely cat or ls it) exited with code 0, as the run "
                "tool's result shows."
            ),
            "weight": 1,
        },
        "does_task": {
            "description": (
                "The program's actual output, as shown in the run tool's results, does what the task asks, "
                "completely and correctly. Judge the printed output, not the program's source and not "
                "the final reply's claims: a reply that describes output the results do not show fails."
            ),
            "weight": 2,
        },
    }
)
