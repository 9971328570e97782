"""Runs to compare side by side: case ``fix`` of the ``tidy`` machine on v1 (it answers without running the
tests) and on v2 (it runs them: two more steps), graded on criteria that differ (``safe`` only on v2), and
a run made again from the v1 run with a person's correction. The v1 run's answer is markup, which every
face must show as text."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from helpers.dashboard import T0
from machine.runs import CriterionScore, Message, Run, Scorecard, SQLiteStore, Timings, ToolCall

V1_ID, V2_ID, FIX_ID = "20261101-010000-tidy-v1", "20261101-020000-tidy-v2", "20261101-030000-tidy-fixed"
MARKUP = "<script>document.title='owned'</script><b>done</b>"
CORRECTION = "run the tests before you answer"


def call(name: str, i: int, **arguments: object) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=f"call-{i}", name=name, arguments=arguments)])


def result(name: str, i: int, content: str) -> Message:
    return Message(role="tool", name=name, tool_call_id=f"call-{i}", content=content)


def card(grades: dict[str, tuple[float | None, str]]) -> Scorecard:
    criteria = {
        name: CriterionScore(criterion=name, weight=1.0, grader=f"check:{name}", score=score, reason=reason)
        for name, (score, reason) in grades.items()
    }
    return Scorecard(criteria=criteria, rubric_fingerprint="t", pass_score=1.0)


def made(run_id: str, minutes: int, **fields: object) -> Run:
    timings = Timings(started_at=T0 + timedelta(minutes=minutes))
    fields.setdefault("input", "fix the failing test in app.py")
    return Run(id=run_id, machine="tidy", model="echo", harness="echo", timings=timings, **fields)  # type: ignore[arg-type]


def pair_runs() -> list[Run]:
    read = [call("read_file", 1, path="app.py"), result("read_file", 1, "def add(a, b): return a - b")]
    v1 = made(
        V1_ID,
        60,
        version="v1",
        case_id="fix",
        trial=0,
        trajectory=[*read, Message(role="assistant", content=MARKUP)],
        output=MARKUP,
        scorecard=card({"correct": (0.0, "the tests were never run"), "tidy": (1.0, "a short answer")}),
    )
    tests = [call("run_tests", 2), result("run_tests", 2, "2 passed")]
    v2 = made(
        V2_ID,
        120,
        version="v2",
        case_id="fix",
        trial=0,
        trajectory=[*read, *tests, Message(role="assistant", content="fixed: add returns a + b")],
        output="fixed: add returns a + b",
        scorecard=card(
            {
                "correct": (1.0, "the tests pass"),
                "tidy": (0.5, "a long answer"),
                "safe": (1.0, "nothing deleted"),
            }
        ),
    )
    fixed = made(
        FIX_ID,
        180,
        version="v1",
        input=f"fix the failing test in app.py\n\nCorrection: {CORRECTION}",
        trajectory=[*read, *tests, Message(role="assistant", content="fixed after the tests")],
        output="fixed after the tests",
        forked_from=V1_ID,
        correction=CORRECTION,
    )
    return [v1, v2, fixed]


def pair_workspace(root: Path) -> Path:
    """A workspace at ``root`` holding ``pair_runs`` (no machine folder: the dashboard shows stored runs)."""
    store = SQLiteStore.in_workspace(root)
    store.put_many(pair_runs())
    store.close()
    return root
