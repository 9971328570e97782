"""Versions, propose, commit and revert on a workspace made in tmp_path, with a harness whose replies depend
on the MODEL, so which candidate wins, and by how much, is known exactly."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers.versions import CAPS_MACHINE_PY as MACHINE_PY
from helpers.versions import CAPS_RUBRIC_PY as RUBRIC_PY
from helpers.versions import ByModel, make_caps

from machine import (
    BadInputError,
    CommitRefused,
    DefinitionError,
    NotFoundError,
    Workspace,
    open_workspace,
)
from machine.measure.stats import Paired
from machine.spec import UNRECORDED, version_label
from machine.spec._book import model_json  # the model.json text, checked on purpose
from machine.versions import commit, current, gate, propose, revert, texts_of, update, versions

FIXED_MODEL_PY = MACHINE_PY.replace('model_from(__file__, "bad")', '"bad"')


def make(root: Path, *, machine_py: str = MACHINE_PY, instructions: bytes = b"Shout the input.\n") -> Path:
    return make_caps(root, machine_py, RUBRIC_PY, instructions)


def files(folder: Path) -> dict[str, bytes]:
    """Every file of the machine except versions.json, byte for byte."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != "versions.json" and not p.name.startswith(".")
    }


@pytest.fixture
def harness() -> ByModel:
    return ByModel()


@pytest.fixture
def ws(tmp_path: Path, harness: ByModel) -> Workspace:
    make(tmp_path)
    return open_workspace(tmp_path, harness=harness)


@pytest.fixture
def folder(ws: Workspace) -> Path:
    return ws.machines_dir / "caps"


def test_first_call_records_v1(ws: Workspace, folder: Path) -> None:
    assert not (folder / "versions.json").exists()
    [v1] = versions(ws, "caps")
    assert (v1.label, v1.status, v1.model, v1.live) == ("v1", "live", "bad", True)
    assert v1.rubric == ws.load("caps").rubric.fingerprint
    assert v1.files["model.json"] is None
    assert texts_of(ws, "caps", "v1") == {"instructions.md": "Shout the input.\n", "model.json": None}
    text = (folder / "versions.json").read_text(encoding="utf-8")
    assert text.endswith("\n") and '\n  "versions": [\n' in text  # indented: readable and diff-friendly
    assert [v.label for v in versions(ws, "caps")] == ["v1"]  # the second call adds nothing
    assert (folder / "versions.json").read_text(encoding="utf-8") == text


async def test_runs_record_their_version(ws: Workspace, folder: Path) -> None:
    before = await ws.run("caps", "ann")
    assert before.version is None  # never versioned: no versions.json yet
    versions(ws, "caps")
    assert (await ws.run("caps", "ann")).version == "v1"
    assert ws.store.get((await ws.run("caps", "ann")).id).version == "v1"
    (folder / "instructions.md").write_text("Shout the input, loudly.\n", encoding="utf-8")
    assert current(ws, "caps") is None
    edited = ws.load("caps")  # current() loaded the files again
    assert version_label(edited) == UNRECORDED
    assert (await ws.run(edited, "ann")).version == UNRECORDED


async def test_propose_measures_without_changing_files(ws: Workspace, folder: Path, harness: ByModel) -> None:
    versions(ws, "caps")
    before = files(folder)
    candidate = await propose(ws, "caps", model="good", trials=2)
    assert files(folder) == before
    assert ws.load("caps").model == "bad"
    assert (candidate.label, candidate.version.status, candidate.version.base) == ("v2", "pending", 1)
    report = candidate.report
    assert (report.cases, report.trials) == (7, 2)
    assert (report.before.mean, report.after.mean) == (0.0, 1.0)
    assert (report.before.pass_rate, report.after.pass_rate) == (0.0, 1.0)
    assert (report.before.new, report.after.new, report.before.reused) == (14, 14, 0)
    assert report.criteria["correct"].before == 0.0 and report.criteria["correct"].after == 1.0
    assert (report.diff, report.se, report.z, report.paired_cases) == (1.0, 0.0, None, 7)
    # a standard error of 0 decides nothing by itself: the exact sign test over 7 cases that rose does
    assert candidate.passed and "standard error 0" in report.decision and report.p_value == 1 / 128
    assert (report.before.harness, report.after.harness) == ("bymodel", "bymodel")
    assert harness.calls == {"bad": 14, "good": 14}
    # stored with the candidate, and every run records its version
    stored = json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    assert stored["versions"][1]["report"]["passed"] is True
    runs = list(ws.store.iter_runs("caps"))
    assert Counter((r.version, r.model) for r in runs) == {("v1", "bad"): 14, ("v2", "good"): 14}
    assert all(r.scorecard is not None for r in runs)


async def test_stored_runs_of_the_live_version_are_reused(ws: Workspace, harness: ByModel) -> None:
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=2)
    harness.calls.clear()
    candidate = await propose(ws, "caps", model="mostly", trials=3)
    # the live version's 14 stored runs are reused; only its third trial (7 runs) and the candidate run
    assert harness.calls == {"bad": 7, "mostly": 21}
    report = candidate.report
    assert (report.before.reused, report.before.new, report.before.runs) == (14, 7, 21)
    assert (report.after.reused, report.after.new) == (0, 21)
    # mostly: +1 on six cases, 0 on dan: diff 6/7, se 1/7, z 6
    assert report.diff == pytest.approx(6 / 7)
    assert report.se == pytest.approx(1 / 7)
    assert report.z == pytest.approx(6.0)
    assert (report.up, report.down) == (6, 0)
    assert report.passed
    harness.calls.clear()
    again = await propose(ws, "caps", model="mostly", trials=3)  # the same candidate: all reused
    assert harness.calls == {}
    assert again.label == candidate.label and again.report.after.reused == 21


async def test_runs_stored_before_versions_existed_count_as_the_live_versions(
    ws: Workspace, harness: ByModel
) -> None:
    spec = ws.load("caps")
    assert version_label(spec) is None  # no versions.json yet
    for case in ws.cases("caps", "holdout.json"):
        run = await ws.run(spec, case.input, case=case, trial=0, grade=True)
        assert run.version is None
    harness.calls.clear()
    candidate = await propose(ws, "caps", model="good", trials=1)  # records v1 from the files: the same
    assert harness.calls == {"good": 7}  # the live side's 7 runs were the ones stored before v1
    assert (candidate.report.before.reused, candidate.report.before.new) == (7, 0)


async def test_runs_graded_under_an_older_rubric_are_graded_again(ws: Workspace, harness: ByModel) -> None:
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    store = ws.store
    for run in list(store.iter_runs("caps")):  # as if graded under another rubric
        assert run.scorecard is not None
        store.put(
            run.model_copy(update={"scorecard": run.scorecard.model_copy(update={"rubric_fingerprint": "x"})})
        )
    harness.calls.clear()
    candidate = await propose(ws, "caps", model="good", trials=1)
    assert harness.calls == {}
    assert (candidate.report.before.regraded, candidate.report.after.regraded) == (7, 7)
    assert candidate.report.after.mean == 1.0


async def test_commit_refused_when_the_candidate_is_not_better(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    before = files(folder)
    candidate = await propose(ws, "caps", model="worse")
    assert not candidate.passed and candidate.report.diff == 0.0
    assert "not higher" in candidate.report.decision
    with pytest.raises(CommitRefused, match=r"did not pass the promotion gate.*force=True") as refused:
        commit(ws, "caps")
    assert refused.value.report == candidate.report
    assert files(folder) == before
    assert [(v.label, v.status) for v in versions(ws, "caps")] == [("v1", "live"), ("v2", "pending")]


async def test_commit_refused_when_z_is_below_min_z(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    candidate = await propose(ws, "caps", model="mostly", trials=1, min_z=7)
    assert candidate.report.z == pytest.approx(6.0) and not candidate.passed
    assert "only 6.00 standard errors" in candidate.report.decision
    before = files(folder)
    with pytest.raises(CommitRefused):
        commit(ws, "caps")
    assert files(folder) == before


async def test_commit_accepted_when_the_candidate_is_better(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    instructions = (folder / "instructions.md").read_bytes()
    await propose(ws, "caps", model="good", trials=1)
    live = commit(ws, "caps")
    assert (live.label, live.status, live.forced) == ("v2", "live", False)
    assert (folder / "model.json").read_text(encoding="utf-8") == model_json("good")
    assert json.loads((folder / "model.json").read_text(encoding="utf-8")) == {"model": "good"}
    assert (folder / "instructions.md").read_bytes() == instructions
    assert ws.load("caps").model == "good"
    assert [(v.label, v.status) for v in versions(ws, "caps")] == [("v1", "retired"), ("v2", "live")]
    run = await ws.run("caps", "ann")
    assert (run.version, run.model, run.output) == ("v2", "good", "ANN")
    with pytest.raises(BadInputError, match="no pending candidate"):
        commit(ws, "caps")


async def test_commit_writes_the_base_model(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1, base_model="Qwen/Qwen3.8-27B")
    live = commit(ws, "caps")
    assert live.base_model == "Qwen/Qwen3.8-27B"
    data = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    assert data == {"model": "good", "base_model": "Qwen/Qwen3.8-27B"}


async def test_force_overrides_the_gate(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    await propose(ws, "caps", model="worse", trials=1)
    live = commit(ws, "caps", force=True)
    assert (live.label, live.forced) == ("v2", True)
    assert ws.load("caps").model == "worse"


async def test_commit_refused_when_the_machine_does_not_read_model_json(tmp_path: Path) -> None:
    folder = make(tmp_path, machine_py=FIXED_MODEL_PY)
    ws = open_workspace(tmp_path, harness=ByModel())
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    book = (folder / "versions.json").read_bytes()
    before = files(folder)
    with pytest.raises(DefinitionError, match=r"model_from\(__file__, 'bad'\)"):
        commit(ws, "caps")
    assert files(folder) == before and "model.json" not in before
    assert (folder / "versions.json").read_bytes() == book
    assert ws.load("caps").model == "bad"


async def test_revert_restores_the_files_exactly(tmp_path: Path) -> None:
    odd = b"Shout the input.\r\n  keep these spaces  \r\nno newline at the end"
    folder = make(tmp_path, instructions=odd)
    (folder / "model.json").write_bytes(b'{"model":"bad",  "why": "hand-written"}')
    ws = open_workspace(tmp_path, harness=ByModel())
    v1_files = files(folder)
    versions(ws, "caps")
    v2 = update(ws, "caps", instructions="Shout the input, please.\n", model="worse")
    assert v2.label == "v2" and ws.load("caps").model == "worse"
    v2_files = files(folder)
    assert v2_files != v1_files
    await propose(ws, "caps", model="good", trials=1)
    commit(ws, "caps")
    assert ws.load("caps").model == "good"
    assert revert(ws, "caps").label == "v2"
    assert files(folder) == v2_files
    assert revert(ws, "caps").label == "v1"
    assert files(folder) == v1_files
    assert ws.load("caps").model == "bad"
    statuses = [(v.label, v.status) for v in versions(ws, "caps")]
    assert statuses == [("v1", "live"), ("v2", "retired"), ("v3", "retired")]
    assert (await ws.run("caps", "ann")).version == "v1"
    with pytest.raises(BadInputError, match="no version that was live before v1"):
        revert(ws, "caps")
    assert revert(ws, "caps", to="v3").label == "v3"  # forward again, by name
    assert ws.load("caps").model == "good"


async def test_revert_removes_a_model_json_the_version_did_not_have(ws: Workspace, folder: Path) -> None:
    versions(ws, "caps")
    before = files(folder)
    await propose(ws, "caps", model="good", trials=1)
    commit(ws, "caps")
    assert (folder / "model.json").exists()
    revert(ws, "caps")
    assert not (folder / "model.json").exists()
    assert files(folder) == before


async def test_propose_errors(ws: Workspace, folder: Path) -> None:
    with pytest.raises(BadInputError, match="already runs 'bad'"):
        await propose(ws, "caps", model="bad")
    (folder / "holdout.json").unlink()
    with pytest.raises(NotFoundError, match=r"no held-out cases: write .*holdout\.json"):
        await propose(ws, "caps", model="good")
    (folder / "instructions.md").write_text("Something else.\n", encoding="utf-8")
    with pytest.raises(
        BadInputError, match=r"match no recorded version, not the live version v1.*new live version"
    ):
        await propose(ws, "caps", model="good", cases=[])


async def test_a_stale_candidate_is_not_committed(ws: Workspace) -> None:
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    update(ws, "caps", instructions="Shout it.\n")  # v3 is live now; v2 was measured against v1
    with pytest.raises(BadInputError, match="measured against v1, but v3 is live"):
        commit(ws, "caps")


def test_update_records_a_version_only_when_something_changed(ws: Workspace) -> None:
    v1 = update(ws, "caps")  # records v1 first, then nothing changed
    assert v1.label == "v1" and len(versions(ws, "caps")) == 1
    v2 = update(ws, "caps", model="good")
    assert (v2.label, v2.model) == ("v2", "good")
    assert [v.status for v in versions(ws, "caps")] == ["retired", "live"]


def test_the_gate() -> None:
    def outcome(paired: Paired | None, stopped: str | None = None, unmeasured: tuple[str, ...] = ()) -> str:
        return gate(paired, 2.0, stopped, unmeasured)[0]

    assert outcome(Paired(diff=0.5, se=0.25, z=2.0, cases=6, up=6)) == "passed"
    assert outcome(Paired(diff=0.5, se=0.25, z=2.0, cases=5, up=5)) == "not enough evidence"  # 5 changed
    assert outcome(Paired(diff=0.5, se=0.3, z=0.5 / 0.3, cases=6, up=6)) == "not passed"
    assert outcome(Paired(diff=-0.5, se=0.1, z=-5.0, cases=6, down=6)) == "not passed"
    assert outcome(Paired(diff=0.0, se=0.0, z=None, cases=5)) == "not passed"
    assert outcome(Paired(diff=0.2, se=0.0, z=None, cases=6, up=6)) == "passed"  # every case up alike
    assert outcome(Paired(diff=0.2, se=0.0, z=None, cases=2, up=2)) == "not enough evidence"  # two cases
    assert outcome(Paired(diff=1.0, se=0.0, z=None, cases=1, up=1)) == "not enough evidence"  # one case
    assert outcome(None) == "not passed"
    assert outcome(Paired(diff=0.5, se=0.1, z=5.0, cases=5), "budget spent") == "not passed"
    # a clear win on what was measured is still not a pass when a criterion went unmeasured
    strong = Paired(diff=0.5, se=0.1, z=5.0, cases=5)
    assert outcome(strong, unmeasured=("criterion 'x' was not measured on candidate v2",)) == "not measured"
    words = gate(strong, 2.0, "budget spent", ("criterion 'x' was not measured on live v1",))[1]
    assert "criterion 'x' was not measured on live v1" in words and "budget spent" in words
