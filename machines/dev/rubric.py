"""What dev is graded on: a command passed after its last change (checked), and three judged criteria
about doing what the person asked, and only that."""

from machine import define_rubric

ACTS_ON_REQUEST = (
    "Acts on what the request is: it changes files only when the person asked for a change (a fix, a "
    "feature, a new file). For a question, a request to explain or plan, or a request to run something "
    "and report, it reads and runs what it needs and answers, leaving every file as it was. For unclear "
    "input, such as a single word like 'test', it asks what the person wants (it may say briefly what it "
    "could do) instead of guessing and changing things."
)
"""Shared with assistant, a sibling machine that acts on requests the same way."""

rubric = define_rubric(
    {
        "verified": {
            "description": (
                "When it changed files, a command that checks the work (not only echo, ls, cat and the "
                "like, and not a test runner that found no tests) exited with code 0 after its last "
                "change, as the run tool's results show. A run that changed nothing has nothing to "
                "verify and passes, unless the case asked for a change (a fix or a feature), where "
                "changing nothing fails."
            ),
            "weight": 1,
        },
        "did_what_was_asked": {
            "description": (
                "Did what was asked, completely and correctly, as the tool results show: a fix makes "
                "the failing tests pass without weakening or deleting them; a feature works as "
                "described; an answer or plan is right about the project's actual code and names the "
                "files and functions involved; a report states what the command really printed."
            ),
            "weight": 2,
        },
        "stayed_on_task": {
            "description": (
                "Stayed on the request: no changes to unrelated files, no refactoring, renaming, "
                "reformatting or new dependencies nobody asked for, and no long digressions in the reply."
            ),
            "weight": 1,
        },
        "acts_on_request": {"description": ACTS_ON_REQUEST, "weight": 1},
    }
)
