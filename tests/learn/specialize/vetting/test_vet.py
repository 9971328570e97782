"""Vetting an author's child machine in a separate, time-limited process: it must load as a child of its
parent on the model asked for, keep every inherited criterion, add 1 to 3 of its own, and its checks must
grade real sample runs without raising; nothing it does reaches the calling process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from helpers.bwrap import needs_bubblewrap
from helpers.vetting import HEADER, MODEL, RUBRIC, SAMPLES, SHOWS_WORK, child, child_py, root, vet

import machine
from machine.errors import BadInputError, NotFoundError
from machine.learn.specialize.vetting._child import vet_child
from machine.sandboxes import LocalSandbox

pytestmark = needs_bubblewrap()
__all__ = ["root"]  # the fixture


def test_a_good_child_passes_with_its_checks_results_on_every_sample(root: Path) -> None:
    (root / "machines" / "wordmath" / "steps").mkdir()
    (root / "machines" / "wordmath" / "steps" / "cases.json").write_text("[]")
    vetting = vet(root, child())
    assert vetting.ok and vetting.problems == [] and vetting.second_look == []
    assert vetting.inherited == ["correct"]
    assert vetting.own == ["shows_work", "clear"]
    assert vetting.judged == ["clear"]
    assert vetting.model == MODEL and vetting.seconds > 0
    [result] = vetting.checks
    assert (result.criterion, result.grader) == ("shows_work", "shows_work")
    got = [(s.run_id, s.case_id, s.score, s.reason) for s in result.samples]
    assert got == [
        (SAMPLES[0].id, "add", 1.0, "2 line(s)"),
        (SAMPLES[1].id, "dozen", 0.0, "1 line(s)"),
        (SAMPLES[2].id, "off-by-one", 0.0, "1 line(s)"),
    ]
    assert [s.score_without_output for s in result.samples] == [0.0, 0.0, 0.0]
    steps = root / "machines" / "wordmath" / "steps"
    assert sorted(p.name for p in steps.iterdir()) == ["cases.json"], "the workspace itself is not written"


def test_a_check_that_raises_on_a_sample_is_a_problem_naming_criterion_case_and_error(root: Path) -> None:
    extra = """
def uses_answer(run, case):
    if case["answer"] == 12:
        raise KeyError("steps")
    return str(case["answer"]) in run.output
"""
    graders = '{"shows_work": check("uses_answer", uses_answer), "clear": judge()}'
    vetting = vet(root, child(child_py(graders, extra=extra)))
    assert not vetting.ok
    [problem] = vetting.problems
    assert "'uses_answer'" in problem and "'shows_work'" in problem
    assert f"sample run {SAMPLES[1].id} (case 'dozen')" in problem
    assert "KeyError" in problem and "'steps'" in problem
    line = child_py(graders, extra=extra).splitlines().index('        raise KeyError("steps")') + 1
    assert f"machine.py line {line}" in problem
    assert [s.score for s in vetting.checks[0].samples] == [1.0, None, 0.0]


def test_a_check_that_returns_no_score_is_a_problem(root: Path) -> None:
    graders = '{"shows_work": check("shows_work", lambda run: 2), "clear": judge()}'
    vetting = vet(root, child(child_py(graders)))
    assert not vetting.ok
    assert "returned 2" in vetting.problems[0] and "failed on 2 more sample run(s)" in vetting.problems[0]


@pytest.mark.parametrize("broken", ["machine.py", "rubric.py"])
def test_a_child_that_does_not_import_names_the_file_and_line(root: Path, broken: str) -> None:
    files = child()
    files[broken] = files[broken] + "\ndef oops(:\n    pass\n"
    line = files[broken].splitlines().index("def oops(:") + 1
    vetting = vet(root, files)
    assert not vetting.ok and vetting.checks == [] and vetting.own == []
    [problem] = vetting.problems
    assert "does not load" in problem and "SyntaxError" in problem
    assert f"{broken} line {line}" in problem
    assert "machine-vet-" not in problem, "no temporary path reaches the author"


def test_an_error_at_import_gives_the_last_frames_in_the_authors_files(root: Path) -> None:
    extra = """
def helper():
    return {}["missing"]

VALUE = helper()
"""
    vetting = vet(root, child(child_py(extra=extra)))
    [problem] = vetting.problems
    source = child_py(extra=extra).splitlines()
    inner, outer = source.index('    return {}["missing"]') + 1, source.index("VALUE = helper()") + 1
    assert "KeyError: 'missing'" in problem
    assert f"machine.py line {outer}: VALUE = helper()" in problem
    assert f"machine.py line {inner}" in problem
    assert "Traceback" not in problem


def test_a_child_named_other_than_its_folder_is_refused(root: Path) -> None:
    misnamed = child_py().replace('name="wordmath/steps"', 'name="wordmath/other"')
    [problem] = vet(root, child(misnamed)).problems
    assert problem == (
        "the child 'wordmath/steps' does not load: DefinitionError: machine.py defines a machine named "
        "'wordmath/other'; "
        "its folder makes it 'wordmath/steps'"
    )


def test_a_child_built_with_define_machine_is_refused(root: Path) -> None:
    built = (
        HEADER
        + SHOWS_WORK
        + """
from machine.grade import define_rubric
everything = define_rubric({**parent.rubric, **rubric})
machine = define_machine(
    name="wordmath/steps",
    intent="Show steps.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, parent.model),
    rubric=everything,
    evaluator=define_evaluator(everything, {**parent.evaluator.graders,
        "shows_work": check("shows_work", shows_work), "clear": judge()}),
)
"""
    )
    vetting = vet(root, child(built))
    assert not vetting.ok
    assert vetting.problems == [
        "'wordmath/steps' is not a child of 'wordmath': build it in machine.py with "
        "define_child(parent, name='wordmath/steps', ...), taking the parent with "
        "`from ..machine import machine as parent`"
    ]
    assert vetting.inherited == ["correct"] and vetting.own == ["shows_work", "clear"]


def _machine_with(criteria: str, graders: str) -> str:
    return (
        HEADER
        + SHOWS_WORK
        + f"""
from machine.grade import define_rubric
mine = define_rubric({criteria})
machine = define_machine(
    name="wordmath/steps",
    intent="Show steps.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, parent.model),
    rubric=mine,
    evaluator=define_evaluator(mine, {graders}),
)
"""
    )


def test_a_child_that_drops_an_inherited_criterion_is_refused(root: Path) -> None:
    dropped = _machine_with('{"shows_work": "Steps."}', '{"shows_work": check("s", shows_work)}')
    vetting = vet(root, child(dropped))
    assert not vetting.ok
    assert any("drops the inherited criterion 'correct'" in p for p in vetting.problems)
    assert vetting.inherited == []


def test_a_child_that_alters_an_inherited_criterion_is_refused(root: Path) -> None:
    altered = _machine_with(
        '{"correct": {"description": "Any number will do.", "weight": 1}, "shows_work": "Steps."}',
        '{"correct": check("c", lambda run: True), "shows_work": check("s", shows_work)}',
    )
    vetting = vet(root, child(altered))
    assert any("changes the inherited criterion 'correct'" in p for p in vetting.problems)
    assert vetting.own == ["shows_work"]


def test_a_child_that_redefines_an_inherited_criterion_with_define_child_does_not_load(root: Path) -> None:
    rubric = RUBRIC.replace('"clear":', '"correct":')
    graders = '{"shows_work": check("shows_work", shows_work), "correct": judge()}'
    vetting = vet(root, child(child_py(graders), rubric))
    [problem] = vetting.problems
    assert "does not load: DefinitionError" in problem and "redefines criterion 'correct'" in problem
    assert "machine.py line" in problem


@pytest.mark.parametrize("count", [0, 4])
def test_a_child_with_0_or_4_criteria_of_its_own_is_refused(root: Path, count: int) -> None:
    names = [f"c{i}" for i in range(count)]
    criteria = ", ".join(f'"{n}": "Criterion {n}."' for n in names)
    rubric = f"from machine import define_rubric\n\nrubric = define_rubric({{{criteria}}})\n"
    graders = "{" + ", ".join(f'"{n}": judge()' for n in names) + "}"
    vetting = vet(root, child(child_py(graders), rubric))
    [problem] = vetting.problems
    assert f"adds {count} criteria of its own" in problem and "1 to 3 new criteria" in problem
    assert vetting.own == names


def test_a_child_on_another_model_than_the_one_asked_for_is_refused(root: Path) -> None:
    vetting = vet(root, child(child_py(model='"org/other"')))
    [problem] = vetting.problems
    assert "runs on 'org/other', not on the model asked for, 'org/child-model'" in problem
    assert vet(root, child(child_py(model='"org/other"')), model=None).ok


@pytest.mark.slow
def test_a_child_that_sleeps_forever_at_import_is_stopped_within_the_limit(root: Path) -> None:
    before = set(sys.modules)
    started = time.monotonic()
    vetting = vet(root, child(child_py(extra="import time\ntime.sleep(10_000)\n")), timeout_s=3)
    assert time.monotonic() - started < 5
    assert not vetting.ok
    [problem] = vetting.problems
    # Stopped by the process's own alarm (which says where it was) or, when starting Python took most of
    # the three seconds, by the caller's kill: either way the problem says loading the child ran out of time.
    line = HEADER.count("\n") + 2
    alarm = f"did not finish in time (it was at machine.py line {line}: time.sleep(10_000))"
    kill = "did not finish within 3 s while loading 'wordmath/steps', and was stopped"
    assert alarm in problem or kill in problem, problem
    assert set(sys.modules) == before


def _alive(marker: str) -> list[int]:
    """Host processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_a_child_that_ignores_the_alarm_is_killed_with_everything_it_started(root: Path) -> None:
    marker = f"vet-helper-{os.getpid()}-{time.monotonic_ns()}"
    extra = f"""import signal, subprocess, sys, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10_000)", "{marker}"])
time.sleep(10_000)
"""
    started = time.monotonic()
    vetting = vet(root, child(child_py(extra=extra)), timeout_s=3)
    assert time.monotonic() - started < 6
    [problem] = vetting.problems
    assert problem.startswith(
        "the process vetting the child did not finish within 3 s while loading 'wordmath/steps', "
        "and was stopped"
    )
    for _ in range(40):  # killed with the sandbox: gone at once, give the kernel a moment
        if not _alive(marker):
            break
        time.sleep(0.05)
    assert _alive(marker) == [], "the process the child started outlived it"


@pytest.mark.slow
def test_a_check_that_hangs_on_a_sample_is_stopped_and_named(root: Path) -> None:
    extra = """
def spins(run):
    while "12" in run.output:
        pass
    return True
"""
    graders = '{"shows_work": check("spins", spins), "clear": judge()}'
    vetting = vet(root, child(child_py(graders, extra=extra)), check_timeout_s=1)
    [problem] = vetting.problems
    assert "'spins' of criterion 'shows_work'" in problem and "(case 'dozen')" in problem
    assert "did not finish within 1.0 s" in problem
    assert [s.score for s in vetting.checks[0].samples] == [1.0, None, 1.0]


@pytest.mark.slow
def test_a_check_that_blocks_the_alarm_is_killed_and_the_criterion_it_was_grading_named(root: Path) -> None:
    extra = """import signal, time

def stuck(run):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(10_000)
"""
    graders = '{"shows_work": check("stuck", stuck), "clear": judge()}'
    started = time.monotonic()
    vetting = vet(root, child(child_py(graders, extra=extra)), timeout_s=5)
    assert time.monotonic() - started < 8
    [problem] = vetting.problems
    assert problem.startswith(
        "the process vetting the child did not finish within 5 s while the check of criterion 'shows_work' "
        f"graded run {SAMPLES[0].id} (case 'add'), and was stopped"
    )


def test_a_child_that_touches_globals_at_import_leaves_the_caller_alone(root: Path) -> None:
    extra = """import json, os, sys
import machine as library
library.VETTED = True
json.VETTED = True
os.environ["MACHINE_VETTED"] = "1"
sys.modules["machine_vetted"] = library
"""
    before = set(sys.modules)
    vetting = vet(root, child(child_py(extra=extra)))
    assert vetting.ok, vetting.problems
    assert not hasattr(machine, "VETTED")
    assert "MACHINE_VETTED" not in os.environ
    assert "machine_vetted" not in sys.modules
    assert set(sys.modules) == before, "the caller imported nothing of the child's"


def test_the_childs_code_sees_nothing_of_the_callers_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VET_TEST_API_KEY", "k-123")
    monkeypatch.setenv("VET_TEST_DB_URL", "postgres://u:p@db")
    monkeypatch.setenv("VET_TEST_PLAIN", "plain")
    extra = """import os
SEEN = [os.environ.get(n, "-") for n in ("VET_TEST_API_KEY", "VET_TEST_DB_URL", "VET_TEST_PLAIN")]
"""
    graders = '{"shows_work": check("env", lambda run: (True, " ".join(SEEN))), "clear": judge()}'
    vetting = vet(root, child(child_py(graders, extra=extra)))
    assert {s.reason for s in vetting.checks[0].samples} == {"- - -"}


def test_memory_is_capped(root: Path) -> None:
    vetting = vet(root, child(child_py(extra="HOARD = bytearray(8 * 1024**3)\n")))
    [problem] = vetting.problems
    line = HEADER.count("\n") + 1
    assert "does not load: MemoryError" in problem and f"machine.py line {line}: HOARD" in problem


def test_what_the_childs_code_prints_cannot_pass_for_the_result(root: Path) -> None:
    extra = 'print(\'{"result": {"ok": true, "problems": []}}\', flush=True)\n'
    vetting = vet(root, child(child_py(extra=extra, model='"org/other"')))
    assert not vetting.ok and "runs on 'org/other'" in vetting.problems[0]


def test_a_child_that_exits_at_import_is_reported_with_its_exit(root: Path) -> None:
    vetting = vet(root, child(child_py(extra="import os\nos._exit(3)\n")))
    [problem] = vetting.problems
    assert problem.startswith(
        "the process vetting the child exited with code 3 while loading 'wordmath/steps' before it reported"
    )
    stopped = vet(root, child(child_py(extra="raise SystemExit(4)\n")))
    assert "does not load: SystemExit: 4" in stopped.problems[0]


def test_checks_that_ignore_what_the_run_did_get_a_second_look(root: Path) -> None:
    extra = """
def big_answer(run, case):
    return case["answer"] > 6
"""
    graders = '{"shows_work": check("always", lambda run: True), "clear": check("big_answer", big_answer)}'
    vetting = vet(root, child(child_py(graders, extra=extra)))
    assert vetting.ok and vetting.judged == []
    always, big = vetting.second_look[0], vetting.second_look[1:]
    assert "'always' of criterion 'shows_work' gives all 3 sample runs the same score (1)" in always
    assert len(big) == 1 and "'big_answer' of criterion 'clear'" in big[0]
    assert "reads only what the run started with" in big[0]
    assert [s.score for s in vetting.checks[1].samples] == [0.0, 1.0, 1.0]


def test_one_sample_is_never_alike_and_one_failing_sample_proves_nothing(root: Path) -> None:
    vetting = vet(root, child(), samples=SAMPLES[:1])
    assert vetting.ok and vetting.second_look == []
    failing = vet(root, child(), samples=SAMPLES[1:2])
    assert [s.score for s in failing.checks[0].samples] == [0.0] and failing.second_look == []


def test_files_outside_the_child_or_missing_are_refused_before_anything_runs(root: Path) -> None:
    files = {**child(), "../machine.py": "x = 1"}
    vetting = vet(root, files)
    assert not vetting.ok and vetting.checks == []
    assert vetting.problems[0].startswith("'../machine.py' cannot be written")
    assert not (root / "machines" / "machine.py").exists()
    assert vet(root, {"rubric.py": RUBRIC}).problems == ["the child has no machine.py: write one"]


def test_an_unknown_parent_or_a_bad_slug_is_the_callers_error(root: Path) -> None:
    def vetted(parent: str, slug: str) -> object:
        return anyio.run(
            lambda: vet_child(root, parent, slug, child(), model=None, samples=[], sandboxes=LocalSandbox)
        )

    with pytest.raises(NotFoundError, match="no machine 'nope'"):
        vetted("nope", "steps")
    with pytest.raises(BadInputError, match="slug"):
        vetted("wordmath", "../up")


def test_an_authors_check_named_hidden_tests_is_tried_like_any_check(root: Path) -> None:
    graders = '{"shows_work": check("hidden_tests", shows_work), "clear": judge()}'
    vetting = vet(root, child(child_py(graders)))
    assert vetting.ok and vetting.hidden_tests == []
    [result] = vetting.checks
    assert result.grader == "hidden_tests" and len(result.samples) == len(SAMPLES)
