"""What a good chatbot reply is: it answers, it is honest, it is short, and it gets to the point."""

from machine import define_rubric

rubric = define_rubric(
    {
        "answers": {
            "description": (
                "Addresses what the person actually asked, in the context of the conversation so far, "
                "rather than a nearby or more general question."
            ),
            "weight": 3,
        },
        "honest": {
            "description": (
                "States only what it has reason to believe, says plainly when it does not know or "
                "cannot tell, and does not invent facts, sources or abilities."
            ),
            "weight": 1,
        },
        "concise": {
            "description": "Uses as few words as the question needs: a non-empty reply of at most 150 words.",
            "weight": 1,
        },
        "no_filler": {
            "description": (
                "Opens with substance, not with filler such as 'Great question', 'Certainly!' or 'As an AI'."
            ),
            "weight": 1,
        },
    }
)
