"""compare against a real git repository made in tmp_path: the version at a ref (loaded from git into a
temporary folder) against the working tree's, with a harness whose reply depends on the INSTRUCTIONS,
so the expected difference is known exactly."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from helpers.git import git

from machine import BadInputError, Run, SQLiteStore, open_workspace
from machine.measure import Plan, compare
from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop

RUBRIC_YES = """\
from machine import define_rubric

rubric = define_rubric({"agrees": "The reply is yes."})
"""

RUBRIC_NO = """\
from machine import define_rubric

rubric = define_rubric({"refuses": "The reply is no."})
"""

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from

from .rubric import rubric

CRITERION = next(iter(rubric))
WANTED = "yes" if CRITERION == "agrees" else "no"

machine = define_machine(
    name="yesno",
    intent="Answer yes or no.",
    instructions=instructions_from(__file__),
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {CRITERION: check("wanted", lambda run: run.output == WANTED)}),
)
"""

CHILD_PY = """\
from machine import define_child

from ..machine import machine as parent

machine = define_child(parent, name="yesno/child", intent="Answer, as a child.", instructions="Be brief.")
"""

CASES = '[{"id": "ann", "input": "ann"}, {"id": "bob", "input": "bob"}, ' + (
    '{"id": "cat", "input": "cat"}, {"id": "dan", "input": "dan"}]'
)


class Obliging:
    """Says yes to the inputs its instructions list after ``say yes to:``, and no to everything else."""

    name = "obliging"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        _, found, tail = request.instructions.partition("say yes to:")
        allowed = tail.split() if found else []
        text = "yes" if request.input in allowed else "no"

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=text))

        return await run_loop(request, reply)


JUDGED_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, instructions_from, judge

rubric = define_rubric({
    "agrees": {"description": "The reply is yes.", "weight": 1},
    "kind": {"description": "The reply is kind.", "weight": 3},
})

machine = define_machine(
    name="yesno",
    intent="Answer yes or no.",
    instructions=instructions_from(__file__),
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"agrees": check("wanted", lambda run: run.output == "yes"), "kind": KIND}
    ),
)
"""
UNPRICED_JUDGE = 'judge(model="nobody/unpriced-judge")'
"""Under a budget a judge at an unknown price is refused before any call: UNSCORED, with why."""
NOT_ON_DAN = 'check("not_on_dan", lambda run: None if run.input == "dan" else True)'
"""Cannot grade the case ``dan``: UNSCORED there only."""


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def repo(root: Path, instructions: str, *, rubric: str = RUBRIC_YES, child: bool = False) -> Path:
    """A git repository holding machines/yesno at one commit (its cases in the working tree too)."""
    root.mkdir(parents=True, exist_ok=True)
    write(root, ".gitignore", ".machine/\n__pycache__/\n")
    write(root, "machines/yesno/machine.py", MACHINE_PY)
    write(root, "machines/yesno/rubric.py", rubric)
    write(root, "machines/yesno/instructions.md", instructions)
    write(root, "machines/yesno/cases.json", CASES)
    if child:
        write(root, "machines/yesno/child/machine.py", CHILD_PY)
        write(root, "machines/yesno/child/cases.json", CASES)
    git(root, "init", "-q")
    commit(root, "version 1")
    return root


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def stored(root: Path) -> list[Run]:
    store = SQLiteStore(root / ".machine" / "store.db")
    try:
        return list(store.iter_runs())
    finally:
        store.close()


async def test_every_case_moves_by_one_between_two_commits(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    first = git(root, "rev-parse", "HEAD").strip()
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob cat dan")
    second = commit(root, "version 2")
    ws = open_workspace(root, harness=Obliging())
    report = await compare(ws, "yesno", ref="HEAD~1", trials=2)
    assert report.commit == first
    assert (report.a.mean, report.a.pass_rate) == (0.0, 0.0)
    assert (report.b.mean, report.b.pass_rate) == (1.0, 1.0)
    assert report.diff == pytest.approx(1.0)
    assert report.se == 0.0
    assert report.z is None
    assert report.cases == 4
    assert (report.unscored, report.errors) == (0, 0)
    assert report.plan.changes == ["instructions"]
    assert not report.unchanged and not report.rubric_changed
    assert "higher on every case" in report.verdict
    data = report.model_dump(mode="json", by_alias=True)
    assert {"a", "b", "diff", "se", "z", "cases", "unscored", "errors"} <= set(data)
    assert data["a"]["mean"] == 0.0 and data["b"]["pass_rate"] == 1.0
    revisions = {r.revision for r in stored(root)}
    assert revisions == {first, second}  # the working tree is clean: B is the HEAD commit itself


async def test_mixed_differences_give_the_hand_computed_se_and_z(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. say yes to: ann")
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob cat")
    report = await compare(open_workspace(root, harness=Obliging()), "yesno", trials=3, concurrency=3)
    # Per-case differences: ann 0, bob 1, cat 1, dan 0 -> mean 0.5, sd sqrt(1/3), se sqrt(1/3) / 2, z sqrt(3).
    assert report.a.mean == pytest.approx(3 / 12)
    assert report.b.mean == pytest.approx(9 / 12)
    assert report.a.pass_rate == pytest.approx(0.25) and report.b.pass_rate == pytest.approx(0.75)
    assert report.diff == pytest.approx(0.5)
    assert report.se == pytest.approx(math.sqrt(1 / 3) / 2)
    assert report.z == pytest.approx(math.sqrt(3))
    assert report.cases == 4
    assert "within about two standard errors of zero" in report.verdict
    assert "not evidence" in report.verdict


async def test_runs_are_stored_interleaved_with_both_revisions(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    head = git(root, "rev-parse", "HEAD").strip()
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob cat dan")
    order: list[Run] = []
    ws = open_workspace(root, harness=Obliging())
    report = await compare(ws, "yesno", trials=2, concurrency=1, on_run=order.append)
    assert report.b.revision == f"{head}+working-tree" and report.a.revision == head
    assert [r.revision for r in order] == [head, f"{head}+working-tree"] * 8  # A and B alternate
    assert [(r.case_id, r.trial) for r in order[::2]] == [(r.case_id, r.trial) for r in order[1::2]]
    runs = stored(root)
    assert len(runs) == 16
    assert {r.machine for r in runs} == {"yesno"}
    old = [r for r in runs if r.revision == head]
    new = [r for r in runs if r.revision == f"{head}+working-tree"]
    assert len(old) == len(new) == 8
    assert {r.instructions for r in old} == {"Answer. Say no."}
    assert {r.output for r in old} == {"no"} and {r.output for r in new} == {"yes"}
    assert all(r.scorecard is not None for r in runs)
    assert sorted((r.case_id, r.trial) for r in old) == sorted(
        (c, t) for c in ["ann", "bob", "cat", "dan"] for t in (0, 1)
    )


async def test_both_versions_are_graded_with_the_current_rubric_and_a_change_is_noted(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    write(root, "machines/yesno/rubric.py", RUBRIC_NO)  # now "no" is the good answer; instructions unchanged
    report = await compare(open_workspace(root, harness=Obliging()), "yesno", trials=1)
    assert report.rubric_changed and report.plan.changes == ["rubric"]
    assert not report.unchanged
    assert report.a.mean == 1.0 and report.b.mean == 1.0  # A's "no" passes under the CURRENT rubric
    runs = stored(root)
    assert len(runs) == 8
    assert all(r.scorecard is not None and set(r.scorecard.criteria) == {"refuses"} for r in runs)


async def test_an_unchanged_machine_is_noted_before_it_runs(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. say yes to: ann")
    events: list[str] = []

    def on_start(plan: Plan) -> None:
        events.append(f"start unchanged={plan.unchanged}")

    report = await compare(
        open_workspace(root, harness=Obliging()),
        "yesno",
        trials=2,
        on_start=on_start,
        on_run=lambda run: events.append("run"),
    )
    assert events == ["start unchanged=True", *["run"] * 16]
    assert report.unchanged and not report.rubric_changed and report.plan.changes == []
    assert report.diff == 0.0 and report.se == 0.0 and report.z is None
    assert report.model_dump(mode="json", by_alias=True)["unchanged"] is True
    assert "no difference" in report.verdict


async def test_a_child_machine_loads_its_parent_from_the_ref_without_collisions(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.", child=True)
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob")  # the parent changed
    ws = open_workspace(root, harness=Obliging())
    report = await compare(ws, "yesno/child")
    assert report.plan.changes == ["instructions"]
    assert report.diff == pytest.approx(0.5) and report.a.mean == 0.0
    # The working tree's machines are the ones the workspace loads afterwards; the export is gone.
    assert "say yes to: ann bob" in ws.load("yesno/child").instructions
    assert not any("machine-compare-" in str(getattr(m, "__file__", "") or "") for m in sys.modules.values())


async def test_the_working_tree_is_left_as_it_was(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann")
    before = git(root, "status", "--porcelain")
    await compare(open_workspace(root, harness=Obliging()), "yesno")
    assert git(root, "status", "--porcelain") == before
    assert (root / "machines/yesno/instructions.md").read_text() == "Answer. say yes to: ann"


async def test_a_ref_that_does_not_exist_is_named(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer.")
    with pytest.raises(BadInputError, match="'no-such-branch' does not exist"):
        await compare(open_workspace(root, harness=Obliging()), "yesno", ref="no-such-branch")
    assert not (root / ".machine" / "store.db").exists() or stored(root) == []


async def test_a_workspace_outside_git_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "machines/yesno/machine.py", MACHINE_PY)
    write(root, "machines/yesno/rubric.py", RUBRIC_YES)
    write(root, "machines/yesno/instructions.md", "Answer.")
    write(root, "machines/yesno/cases.json", CASES)
    with pytest.raises(BadInputError, match="not in a git repository"):
        await compare(open_workspace(root, harness=Obliging()), "yesno")


async def test_a_machine_absent_at_the_ref_is_named(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer.")
    write(root, "machines/other/machine.py", MACHINE_PY.replace('"yesno"', '"other"'))
    write(root, "machines/other/rubric.py", RUBRIC_YES)
    write(root, "machines/other/instructions.md", "Answer.")
    write(root, "machines/other/cases.json", CASES)
    with pytest.raises(BadInputError, match="machine 'other' did not exist at HEAD"):
        await compare(open_workspace(root, harness=Obliging()), "other")


async def test_an_empty_repository_has_no_ref(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    write(root, "machines/yesno/machine.py", MACHINE_PY)
    write(root, "machines/yesno/rubric.py", RUBRIC_YES)
    write(root, "machines/yesno/instructions.md", "Answer.")
    write(root, "machines/yesno/cases.json", CASES)
    git(root, "init", "-q")
    with pytest.raises(BadInputError, match="'HEAD' does not exist"):
        await compare(open_workspace(root, harness=Obliging()), "yesno")


async def test_a_heaviest_criterion_unscored_on_every_run_makes_the_verdict_not_measured(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    write(root, "machines/yesno/machine.py", JUDGED_PY.replace("KIND", UNPRICED_JUDGE))
    commit(root, "judged")
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob cat dan")
    report = await compare(open_workspace(root, harness=Obliging(), budget=1), "yesno", trials=1)
    # on the criterion that was graded B wins on every case: alone, that would be evidence
    assert (report.a.mean, report.b.mean, report.diff, report.cases) == (0.0, 1.0, 1.0, 4)
    assert report.unmeasured == {"kind": ["A", "B"]}
    assert report.verdict.startswith(
        "Not measured: criterion 'kind' has no scored grade on A (HEAD) (4 UNSCORED)"
    )
    assert "higher" not in report.verdict
    kind = report.b.criteria["kind"]
    assert (kind.runs, kind.unscored, kind.mean) == (0, 4, None)
    [why] = report.b.unscored_reasons["kind"]
    assert why.count == 4 and "'nobody/unpriced-judge' has no known price" in why.reason
    data = report.model_dump(mode="json")
    assert data["unmeasured"] == {"kind": ["A", "B"]} and data["b"]["unmeasured"] == ["kind"]
    assert data["b"]["unscored_reasons"]["kind"][0]["count"] == 4


async def test_a_criterion_unscored_on_some_runs_is_measured_on_the_rest(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "Answer. Say no.")
    write(root, "machines/yesno/machine.py", JUDGED_PY.replace("KIND", NOT_ON_DAN))
    commit(root, "judged")
    write(root, "machines/yesno/instructions.md", "Answer. say yes to: ann bob cat dan")
    report = await compare(open_workspace(root, harness=Obliging()), "yesno", trials=1)
    kind = report.a.criteria["kind"]
    assert (kind.runs, kind.unscored, kind.mean) == (3, 1, 1.0)  # its figures use the 3 scored grades
    assert "check 'not_on_dan' returned None" in report.a.unscored_reasons["kind"][0].reason
    assert report.unmeasured == {}
    # each run's score is over its scored criteria: dan's is "agrees" alone (A 0, B 1), the rest 0.75 -> 1
    assert report.diff == pytest.approx((0.25 * 3 + 1.0) / 4)
    assert (
        report.verdict.startswith("The difference is")
        and "B (the working tree) scores higher" in report.verdict
    )
