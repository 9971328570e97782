"""specialize on a workspace in tmp_path: the author's replies are queued on a harness that also plays the
parent ``shout`` (tests/helpers/optimize.py), so what it wrote, what was refused and why is known."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.optimize import MODEL, Keyed, make_shout

import machine
from machine import BadInputError, Budget, NotTrusted, Workspace, open_workspace
from machine.learn import specialize
from machine.learn.specialize import format_specialization
from machine.runs import Usage
from machine.sandboxes import LocalSandbox
from machine.spec import marked

GOOD_MACHINE = '''\
"""shout/loud: shouting, and only shouting."""

from machine import check, define_child, define_evaluator, instructions_from

from ..machine import machine as parent
from .rubric import rubric


def all_caps(run):
    return run.output.isupper(), f"{run.output!r} is {'' if run.output.isupper() else 'not '}all capitals"


machine = define_child(
    parent,
    name="shout/loud",
    intent="Say the input back in capitals, always.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"caps": check("all_caps", all_caps)}),
)
'''
RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({"caps": {"description": "The whole reply is in capital letters.", "weight": 1}})
"""
INSTRUCTIONS = "Always answer in capital letters."
RAISING = GOOD_MACHINE.replace("return run.output.isupper()", "return run.output.split()[1].isupper()")
NOT_A_CHILD = GOOD_MACHINE.replace(
    "define_child(\n    parent,\n", "define_machine(\n    model='m',\n"
).replace("import check, define_child,", "import check, define_machine,")


def files(machine_py: str = GOOD_MACHINE, *, path: str = "machine.py") -> str:
    return (
        "Here is the child.\n"
        f'<file path="{path}">\n{machine_py}</file>\n'
        f'<file path="rubric.py">\n{RUBRIC}</file>\n'
        f'<file path="instructions.md">\n{INSTRUCTIONS}\n</file>\n'
    )


def case(name: str, **extra: object) -> str:
    return f"<case>{json.dumps({'id': name, 'input': name, 'expected': name.upper(), **extra})}</case>"


TOPICS = "<topic>short names</topic><topic>long names</topic>"
MARKED = (
    "# Written by a model (specialize shout (author thinkingmachines/Inkling)): nothing imports this "
    "file until you review and trust machine shout/loud.\n"
)


async def test_a_good_child_is_accepted_first_time_and_its_cases_are_split(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.push(files(), TOPICS, case("zed") + case("yan") + case("xia") + case("wim"))
    report = await machine.load("shout", workspace=ws).specialize(focus="Loud replies", slug="loud", cases=4)
    assert report.accepted and report.stopped is None, format_specialization(report)
    [attempt] = report.attempts
    assert attempt.outcome == "accepted" and attempt.problems == []
    [caps] = report.checks
    assert caps.criterion == "caps"
    assert sorted(s.score for s in caps.samples) == sorted(
        1.0 if r.output.isupper() else 0.0 for r in map(ws.store.get, report.samples)
    )
    folder = tmp_path / "machines" / "shout" / "loud"
    written = (folder / "machine.py").read_text(encoding="utf-8")
    assert written == MARKED + GOOD_MACHINE  # marked as a model's: even without the record, it is refused
    cases = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    holdout = json.loads((folder / "holdout.json").read_text(encoding="utf-8"))
    assert (len(cases), len(holdout)) == (3, 1) == (report.kept_cases, report.holdout_cases)
    assert {c["id"] for c in cases + holdout} == {"zed", "yan", "xia", "wim"}
    assert report.vetted and report.untrusted == [
        "machines/shout/loud/machine.py",
        "machines/shout/loud/rubric.py",
    ]
    with pytest.raises(NotTrusted, match="machine 'shout/loud' holds code a model wrote"):
        ws.reload("shout/loud")
    machine.trust("shout/loud", workspace=ws)
    child = ws.reload("shout/loud")
    assert child.parent is not None and child.parent.name == "shout"
    assert set(child.rubric) == {"correct", "short", "caps"}
    first = harness.author[0]
    assert "Say the input back in capital letters." in first.input  # the parent's intent
    assert "machines/shout/machine.py" in first.input  # its source
    assert "no idea" in first.input  # a sample run
    assert report.next_steps[-2:] == [
        "suite shout/loud with trials 4",
        "train shout/loud with best of 4",
    ]


async def test_a_check_that_raises_goes_back_with_the_error_then_the_fix_is_accepted(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.push(files(RAISING), files(), TOPICS, case("zed") + case("yan"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=2)
    first, second = report.attempts
    assert first.outcome == "sent back"
    assert any("caps" in p and "IndexError" in p for p in first.problems), first.problems
    assert second.outcome == "accepted"
    resent = harness.author[1]
    assert "IndexError" in resent.input  # the error went back to the author, in the same conversation
    assert resent.history and "shout/loud" in resent.history[0].content
    assert (tmp_path / "machines" / "shout" / "loud" / "machine.py").read_text(
        encoding="utf-8"
    ) == MARKED + GOOD_MACHINE


async def test_a_child_that_leaves_its_parent_is_refused_and_nothing_is_written(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.push(files(NOT_A_CHILD))
    report = await specialize(ws, "shout", focus="loud", slug="loud", retries=0)
    [attempt] = report.attempts
    assert attempt.outcome == "refused" and not report.accepted
    assert any("child" in p and "shout" in p for p in attempt.problems), attempt.problems
    assert report.stopped is not None and "refused after 1 attempts" in report.stopped
    assert not (tmp_path / "machines" / "shout" / "loud").exists()
    assert report.written == [] and len(harness.author) == 1


async def test_a_file_outside_the_child_folder_is_refused(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    parent_file = tmp_path / "machines" / "shout" / "machine.py"
    before = parent_file.read_bytes()
    harness.push(files(path="../machine.py"), files(), TOPICS, case("zed"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=1)
    first, second = report.attempts
    assert first.outcome == "sent back" and any("../machine.py" in p for p in first.problems)
    assert second.outcome == "accepted"
    assert parent_file.read_bytes() == before


def hangul_child(marker: Path) -> str:
    """The break: ``os.system`` bound to U+3164 (HANGUL FILLER, a letter that renders blank), called by
    the check while grading."""
    return GOOD_MACHINE.replace(
        "from machine import check", "import os\n\nfrom machine import check"
    ).replace(
        "def all_caps(run):\n",
        f'LABEL, \u3164 = "loud", os.system\n\n\ndef all_caps(run):\n    \u3164("touch {marker}")\n',
    )


async def test_a_name_that_renders_blank_is_sent_back_never_written_and_never_trusted(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    marker = tmp_path / "ran-on-the-host"
    hangul = hangul_child(marker)
    harness.push(files(hangul), files(hangul))
    report = await specialize(ws, "shout", focus="loud", slug="loud", retries=1)
    first, second = report.attempts
    assert (first.outcome, second.outcome) == ("sent back", "refused") and not report.accepted
    said, missing = first.problems
    assert missing.startswith("no machine.py was written")
    assert said.startswith(
        "<file path='machine.py'> was refused: line 11, column 8 holds \\u3164 (HANGUL FILLER), which shows "
        "as blank space or as nothing, in the name \\u3164"
    ), said
    assert "write every name in ASCII" in said
    assert "\\u3164 (HANGUL FILLER)" in harness.author[1].input  # the author is told where and why
    assert (
        "problem: <file path='machine.py'> was refused: line 11, column 8 holds \\u3164"
        in format_specialization(report)
    )
    folder = tmp_path / "machines" / "shout" / "loud"
    assert not folder.exists() and report.written == []

    # the same child as a specialize without this check wrote it: trusting it is refused, it never loads
    code = {
        folder / "machine.py": marked(hangul, "specialize shout", "shout/loud"),
        folder / "rubric.py": RUBRIC,
    }
    ws.trust.record("shout/loud", code, by="specialize shout")
    folder.mkdir()
    for path, text in code.items():
        path.write_text(text, encoding="utf-8")
    (folder / "instructions.md").write_text(INSTRUCTIONS, encoding="utf-8")
    with pytest.raises(
        BadInputError, match=r"machine\.py cannot be trusted as it is: line 12, column 8 holds"
    ):
        machine.trust("shout/loud", workspace=ws)
    with pytest.raises(NotTrusted):
        ws.reload("shout/loud")
    assert not marker.exists()


async def test_cases_missing_what_the_checks_compare_with_are_discarded(
    ws: Workspace, harness: Keyed
) -> None:
    no_expected = '<case>{"id": "vic", "input": "vic"}</case>'
    harness.push(files(), TOPICS, case("zed") + no_expected + "<case>not json</case>" + case("zed"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=2)
    verdicts = {(v.id, v.kept) for v in report.cases}
    assert ("zed", True) in verdicts and ("vic", False) in verdicts
    assert sum(1 for v in report.cases if not v.kept) >= 3  # the missing field, the bad JSON, the repeat
    assert report.kept_cases + report.holdout_cases == 1
    text = format_specialization(report)
    assert "DISCARDED vic" in text and "expected" in text


async def test_a_budget_that_runs_out_keeps_what_was_written_and_says_where(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.optimizer_usage = Usage(input_tokens=200_000)  # every author call: $0.372 on MODEL
    harness.push(files(), TOPICS, case("zed") + case("yan"))
    budget = Budget(0.7)  # the child's call and the topics' are made; the first batch of cases is refused
    capped = open_workspace(tmp_path, harness=harness, budget=budget)
    report = await specialize(capped, "shout", focus="loud", slug="loud", author_model=MODEL, cases=2)
    assert report.accepted
    assert report.stopped is not None and report.stopped.startswith("asking the author for cases (batch 1")
    assert "budget" in report.stopped
    assert (tmp_path / "machines" / "shout" / "loud" / "machine.py").exists()
    assert not (tmp_path / "machines" / "shout" / "loud" / "cases.json").exists()  # none was kept
    assert report.cost.child == pytest.approx(0.372) and report.cost.cases == pytest.approx(0.372)
    assert budget.spent == pytest.approx(report.cost.total)
    assert len(harness.author) == 2


ALIKE = GOOD_MACHINE.replace("return run.output.isupper(),", "return run.output.endswith('!'),")


@pytest.mark.parametrize("second", ["fixed", "same"])
async def test_a_check_that_scores_every_sample_alike_gets_one_second_look(
    tmp_path: Path, ws: Workspace, harness: Keyed, second: str
) -> None:
    harness.push(files(ALIKE), files(GOOD_MACHINE if second == "fixed" else ALIKE), TOPICS, case("zed"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=1)
    first, last = report.attempts
    assert first.outcome == "sent back" and first.problems == []
    assert any("same score" in note for note in first.second_look), first.second_look
    assert "second look" in harness.author[1].input
    assert last.outcome == "accepted" and report.accepted
    assert report.second_look[0].startswith("sent back: ")
    if second == "fixed":
        assert report.second_look[-1] == "after the second look, every check tells the sample runs apart"
        assert [s.score for s in report.checks[0].samples].count(1.0) >= 1
    else:  # sent back once only: the same files again are accepted, and the report says what is left
        assert report.second_look[-1].startswith("still, after the second look: ")
    written = (tmp_path / "machines" / "shout" / "loud" / "machine.py").read_text(encoding="utf-8")
    assert written == MARKED + (GOOD_MACHINE if second == "fixed" else ALIKE)


async def test_reusing_cases_rewrites_only_the_childs_files(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    folder = tmp_path / "machines" / "shout" / "loud"
    folder.mkdir()
    (folder / "machine.py").write_text("broken = (\n", encoding="utf-8")
    kept = '[{"id": "mine", "input": "mine", "expected": "MINE"}]\n'
    (folder / "cases.json").write_text(kept, encoding="utf-8")
    with pytest.raises(BadInputError, match="exists already"):
        await specialize(ws, "shout", focus="loud", slug="loud")
    harness.push(files())
    report = await specialize(ws, "shout", focus="loud", slug="loud", reuse_cases=True)
    assert report.accepted and report.reused_cases and report.cases == []
    assert len(harness.author) == 1  # the child only: no topics, no cases asked for
    assert (folder / "machine.py").read_text(encoding="utf-8") == MARKED + GOOD_MACHINE
    assert (folder / "cases.json").read_text(encoding="utf-8") == kept
    assert report.next_steps[-1] == "train shout/loud with best of 4"


async def test_a_parent_without_runs_or_cases_still_gets_its_child_loaded(
    tmp_path: Path, harness: Keyed
) -> None:
    make_shout(tmp_path)
    (tmp_path / "machines" / "shout" / "cases.json").unlink()
    ws = open_workspace(tmp_path, harness=harness)
    harness.push(files(), TOPICS, case("zed"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=1)
    assert report.accepted and report.samples == []
    assert any("only loaded, not tried on a run" in w for w in report.warnings)
    assert report.kept_cases == 1


HIDDEN_ON_PLAIN = GOOD_MACHINE.replace(
    "from machine import check, define_child, define_evaluator, instructions_from\n",
    "from machine import check, define_child, define_evaluator, instructions_from\n"
    "from machine.sandboxes import hidden_tests\n",
).replace('{"caps": check("all_caps", all_caps)}', '{"caps": hidden_tests(__file__)}')


async def test_hidden_tests_on_a_machine_whose_cases_are_not_projects_stop_at_the_cases(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    harness.push(files(HIDDEN_ON_PLAIN))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=2)
    assert report.accepted and report.kept_cases == 0
    assert report.stopped is not None and report.stopped.startswith(
        "writing the cases: hidden tests need project"
    )
    assert (tmp_path / "machines" / "shout" / "loud" / "machine.py").exists()
    assert len(harness.author) == 1  # no topics or cases were asked for


class Unisolated:
    """The workspace's sandboxes where bubblewrap does not work: nothing a model wrote can be run."""

    def for_library(self, parent: Path, run_id: str, files: Any) -> LocalSandbox:
        return LocalSandbox.create(parent, run_id, files, isolate=False, library=True)

    def for_scratch(self, parent: Path, run_id: str, files: Any) -> LocalSandbox:
        return LocalSandbox.create(parent, run_id, files, isolate=False, scratch=True)


async def test_where_nothing_can_be_vetted_the_child_is_kept_unvetted_and_untrusted(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    ws.adapters = dataclasses.replace(ws.adapters, sandboxes=Unisolated)
    harness.push(files(), TOPICS, case("zed") + case("yan"))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=2)
    [attempt] = report.attempts  # no retry: no reply could be vetted here either
    assert attempt.outcome == "unvetted" and report.accepted and not report.vetted
    assert "kept unvetted" in report.warnings[0] and "not isolated" in report.warnings[0]
    assert (tmp_path / "machines" / "shout" / "loud" / "machine.py").read_text(
        encoding="utf-8"
    ) == MARKED + GOOD_MACHINE
    assert report.untrusted == ["machines/shout/loud/machine.py", "machines/shout/loud/rubric.py"]
    with pytest.raises(NotTrusted):
        ws.reload("shout/loud")


NAMES = ["zed", "yan", "xia", "wim", "val", "uma", "tom", "sid", "rex", "quin", "pam", "olaf"]


async def test_twelve_kept_cases_hold_out_six_so_the_gate_can_pass_a_candidate(
    tmp_path: Path, ws: Workspace, harness: Keyed
) -> None:
    batches = ["".join(case(name) for name in NAMES[i : i + 4]) for i in range(0, 12, 4)]
    harness.push(files(), TOPICS, *batches)
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=12)
    folder = tmp_path / "machines" / "shout" / "loud"
    holdout = json.loads((folder / "holdout.json").read_text(encoding="utf-8"))
    # a quarter would be 3, on which no candidate can pass at min_z 2 (the sign test needs 6 that change)
    assert (report.kept_cases, report.holdout_cases, len(holdout)) == (6, 6, 6)
    assert not [w for w in report.warnings if "gate" in w]


async def test_too_few_kept_cases_for_the_gate_are_said_in_the_report(ws: Workspace, harness: Keyed) -> None:
    harness.push(files(), TOPICS, "".join(case(name) for name in NAMES[:4]))
    report = await specialize(ws, "shout", focus="loud", slug="loud", cases=4)
    assert (report.kept_cases, report.holdout_cases) == (3, 1)  # too few to hold out six and keep any
    [thin] = [w for w in report.warnings if "gate" in w]
    assert thin.startswith("no candidate can pass the gate: holdout.json holds only 1 held-out case,")
    assert "add at least 5 more held-out cases to holdout.json first" in thin
    assert f"warning: {thin}" in format_specialization(report)
