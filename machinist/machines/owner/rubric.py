"""What a good simulated owner is: it answers about cost as its scenario says, and ends when done."""

from machine.grade import define_rubric

rubric = define_rubric(
    {
        "stays_in_role": {
            "description": (
                "Speaks only as the owner its scenario describes, and answers the machinist's questions "
                "about cost exactly as the scenario says: yes, a smaller budget, or no."
            ),
            "weight": 2,
        },
        "ends_when_done": {
            "description": "Closes the conversation with the marker [done] once its goal is met, not before.",
            "weight": 1,
        },
    }
)
