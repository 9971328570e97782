"""``machine optimize`` through the real console script, on a workspace of its own made a git repository.

The machine ``when`` answers "what is the day after DATE?" and is checked for the answer written as
YYYY-MM-DD. The scripted harness plays both sides: the machine's rules carry ``"instructions":
"YYYY-MM-DD"``, so it answers in that form only once its instructions ask for it, and the optimizer's rule
(its brief starts with ``# The machine: when``) proposes instructions that do. Which proposal wins, and by
how much, is therefore known exactly: live v1 passes case ``a`` only of seven (cases mean 1/7) and
held-out case ``f`` only of seven (1/7); the proposal passes every case, a paired gain of +6/7 with SE
1/7 (z 6) on each, six cases that rose (sign test p 1/64)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.env import MACHINE_BIN, clean_env, on_ci
from helpers.when import EXPLANATION, FAILING, LIVE, MACHINE_PY, PROPOSAL, Folder, script

if TYPE_CHECKING:
    from conftest import Command

pytestmark = pytest.mark.skipif(shutil.which("git") is None and not on_ci(), reason="git is not installed")


@pytest.fixture
def ws(tmp_path: Path, machine_cmd: Command) -> Folder:
    return Folder(tmp_path / "ws", machine_cmd)


@pytest.mark.slow
def test_a_kept_proposal_prints_its_report_and_is_left_uncommitted(ws: Folder) -> None:
    out = ws.optimize().stdout
    assert out.startswith(
        "optimize when: live v1 on Qwen/Qwen3.8-27B; 7 cases from cases.json and 7 held-out cases from "
        "holdout.json, 2 trials each; 2 proposals a round from optimizer on thinkingmachines/Inkling; "
        "keep at z >= 2\n"
    )
    assert "live v1: cases mean 0.143, held-out mean 0.143\n" in out
    assert "round 1 (from v1):\n  r1.p1: KEPT: on the cases, the candidate scored +0.857 higher, 6.00 " in out
    assert "; held out, the candidate scored +0.857 higher, 6.00 standard errors above zero" in out
    figures = "mean 1.000 (live 0.143), gain +0.857, SE 0.143, z 6.00, sign test p 0.0156 over 7 cases\n"
    assert f"      cases: {figures}" in out and f"      held-out: {figures}" in out
    assert "  r1.p2: DISCARDED: the same instructions as r1.p1, so it is not measured again\n" in out
    assert "kept: r1.p1, written to instructions.md as pending candidate v2\n" in out
    assert f"diff:\n--- v1\n+++ r1.p1\n@@ -1 +1 @@\n-{LIVE.strip()}\n+{PROPOSAL}\n" in out
    assert (
        "calls: 56 machine runs made (28 of the live version), 0 reused, 0 graded again, 2 optimizer calls"
        in out
    )
    assert "cost: runs $0.0000, judges $0.0000, optimizer $0.0000 (total $0.0000)" in out
    assert out.rstrip().endswith(
        "v2 is pending and written to instructions.md (not committed to git): accept it with "
        "`machine commit when` (and commit the file), or reject it with `machine revert when`"
    )
    assert "warning" not in out
    assert ws.instructions.strip() == PROPOSAL
    assert " M machines/when/instructions.md\n" in ws.status()

    refused = ws.run("commit", "when", "--harness", "tinker", code=2)  # measured on scripted, not tinker
    assert "was measured on harness 'scripted' with model 'Qwen/Qwen3.8-27B', but would run on harness " in (
        refused.stderr
    )
    assert "'tinker'" in refused.stderr and "--force" in refused.stderr
    assert ws.instructions.strip() == PROPOSAL
    done = ws.run("commit", "when")  # where it was measured
    assert done.stdout.strip() == (
        "v2 is live: model Qwen/Qwen3.8-27B, held in instructions.md; measured on the scripted harness"
    )
    assert ws.instructions.strip() == PROPOSAL
    listing = ws.run("versions", "when").stdout
    assert (
        "v1   retired" in listing and "v2   live" in listing and "optimize r1.p1: The failing runs" in listing
    )
    assert "live history: v1 -> v2" in listing

    done = ws.run("revert", "when")
    assert done.stdout.strip() == "v1 is live again: model Qwen/Qwen3.8-27B; its files were written back"
    assert ws.instructions == LIVE
    assert "instructions.md" not in ws.status()


@pytest.mark.slow
def test_revert_before_commit_writes_the_live_instructions_back(ws: Folder) -> None:
    ws.optimize()
    assert ws.instructions.strip() == PROPOSAL
    done = ws.run("revert", "when")
    assert done.stdout.strip() == "v1 is live again: model Qwen/Qwen3.8-27B; its files were written back"
    assert ws.instructions == LIVE  # byte for byte, its final newline too
    assert "instructions.md" not in ws.status()
    listing = ws.run("versions", "when").stdout
    assert "v1   live" in listing and "v2   pending" in listing
    # The candidate is still pending: committing it writes the kept instructions again.
    assert ws.run("commit", "when").stdout.startswith("v2 is live")
    assert ws.instructions.strip() == PROPOSAL


def test_json_prints_the_optimize_report(ws: Folder) -> None:
    done = ws.optimize("--json")
    report = json.loads(done.stdout)
    assert (report["machine"], report["live"], report["kept"], report["candidate"]) == (
        "when",
        "v1",
        "r1.p1",
        "v2",
    )
    assert report["live_cases_mean"] == pytest.approx(1 / 7) and report["live_holdout_mean"] == pytest.approx(
        1 / 7
    )
    assert report["ended"] == "the round was done" and report["stopped"] is None  # never "all 1 rounds"
    first, second = report["rounds"][0]["proposals"]
    assert first["outcome"] == "kept" and second["outcome"] == "discarded"
    assert first["instructions"] == PROPOSAL and first["explanation"] == EXPLANATION
    assert (first["cases"]["diff"], first["cases"]["se"], first["cases"]["z"]) == pytest.approx(
        (6 / 7, 1 / 7, 6)
    )
    assert first["holdout"]["mean"] == 1.0 and first["holdout"]["outcome"] == "passed"
    assert first["holdout"]["p_value"] == 1 / 64
    assert len(first["shown"]) == 4 and set(first["shown"]) <= FAILING  # failing cases, never held-out ones
    assert first["copied"] == [] and first["diff"].startswith("--- v1\n+++ r1.p1\n")
    assert set(report["cost"]) == {"runs", "judges", "optimizer"}
    assert report["calls"] == {"new": 56, "reused": 0, "regraded": 0, "optimizer": 2, "live_new": 28}
    assert (report["gate"]["after"]["harness"], report["gate"]["holdout"]["after"]["harness"]) == (
        "scripted",
        "scripted",
    )
    assert report["gate"]["outcome"] == "passed" and report["gate"]["candidate"] == "v2"
    assert report["warnings"] == [] and "warning" not in done.stderr
    assert ws.instructions.strip() == PROPOSAL


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("held-out", "its held-out mean is lower than v1's (-0.143 over 7 held-out cases)"),
        ("within-2-se", "only 1.00 standard errors above zero (2 needed): not evidence that it is better"),
    ],
)
def test_a_discarded_proposal_leaves_the_files_as_they_were(ws: Folder, kind: str, said: str) -> None:
    ws.write_script(script(wrong_held_out=True) if kind == "held-out" else script(fixes="b"))
    before = {p.name: p.read_bytes() for p in ws.folder.iterdir() if p.is_file()}
    out = ws.optimize().stdout
    assert "r1.p1: DISCARDED: " in out and said in out
    assert "kept: nothing; instructions.md is unchanged\n" in out
    assert out.rstrip().endswith("nothing was kept; instructions.md is as it was")
    after = {p.name: p.read_bytes() for p in ws.folder.iterdir() if p.is_file()}
    assert after == before
    assert ws.status() == ""


WARNING = (
    "warning: machine 'when' has no held-out cases (holdout.json), so a proposal is judged on the cases "
    "it was shown alone, and one that memorized them cannot be told apart: write holdout.json"
)


def test_without_held_out_cases_it_warns_and_decides_on_the_cases(ws: Folder) -> None:
    (ws.folder / "holdout.json").unlink()
    done = ws.optimize("--candidates", "1")
    assert done.stdout.count(WARNING) == 1 and WARNING not in done.stderr  # said once, in the report
    assert "7 cases from cases.json and no held-out cases, 2 trials each; 1 proposal a round" in done.stdout
    assert "r1.p1: KEPT" in done.stdout and "held-out:" not in done.stdout
    assert "0 graded again, 1 optimizer call\n" in done.stdout
    assert ws.instructions.strip() == PROPOSAL


def test_without_held_out_cases_json_warns_on_stderr(ws: Folder) -> None:
    (ws.folder / "holdout.json").unlink()
    done = ws.optimize("--json")
    report = json.loads(done.stdout)
    assert report["warnings"] == [WARNING.removeprefix("warning: ")]
    assert report["holdout_file"] is None and report["live_holdout_mean"] is None
    assert done.stderr.count(WARNING) == 1


def test_a_spent_budget_stops_the_search_cleanly(ws: Folder) -> None:
    # Every machine turn uses 10,000 input tokens: $0.0186 at Qwen3.8-27B's price. The live version's
    # 7 runs fit in $0.20; the proposal's runs do not.
    ws.write_script(script(usage={"input_tokens": 10_000}))
    done = ws.optimize("--trials", "1", "--budget", "0.20")
    out = done.stdout
    assert "ended: stopped early\n" in out
    assert (
        "stopped early: round 1, measuring its proposals on the cases: the budget of $0.2000 is spent" in out
    )
    assert "kept: nothing; instructions.md is unchanged" in out
    assert "live v1: cases mean 0.143" in out
    assert "spent $0.2" in done.stderr and "of budget $0.20" in done.stderr
    assert ws.instructions == LIVE and ws.status() == ""


def test_bad_options_are_one_error_line(ws: Folder) -> None:
    done = ws.optimize("--trials", "0", code=2)
    lines = [line for line in done.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(lines) == 1 and "--trials" in lines[0] and done.stdout == ""
    done = ws.optimize("--holdout", "nowhere.json", code=2)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "nowhere.json" in lines[0], done.stderr
    assert ws.instructions == LIVE


def test_a_machine_whose_instructions_are_not_in_instructions_md_is_refused(ws: Folder) -> None:
    machine_py = ws.folder / "machine.py"
    machine_py.write_text(
        MACHINE_PY.replace("instructions_from(__file__)", repr(LIVE.strip())), encoding="utf-8"
    )
    done = ws.optimize(code=2)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "does not take its instructions from" in lines[0], done.stderr


def test_show_optimizer_says_where_its_folder_is(ws: Folder) -> None:
    out = ws.run("show", "optimizer").stdout
    line = next(line for line in out.splitlines() if "built into the library" in line)
    folder = Path(line.split(" in ", 1)[1].split(" (copy it", 1)[0])
    assert (folder / "instructions.md").is_file() and (folder / "machine.py").is_file()
    assert "(copy it to machines/optimizer to change it)" in line
    assert "thinkingmachines/Inkling" in out and "proposes" in out and "explains" in out
    assert "You improve the instructions" not in out
    out = ws.run("show", "optimizer", "--instructions").stdout
    first = (folder / "instructions.md").read_text(encoding="utf-8").splitlines()[0]
    assert "  instructions:\n" in out and f"    {first}" in out


def test_a_terminal_gets_a_progress_line_per_finished_run(ws: Folder) -> None:
    """On a terminal, stderr gets one line per finished run of the machine; stdout stays the report."""
    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # read while it runs, so a full terminal buffer never blocks the command
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the command closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        command = [str(MACHINE_BIN), "optimize", "when", "--trials", "2", "--rounds", "1"]
        command += ["--harness", "scripted", "--script", str(ws.root / "script.json")]
        done = subprocess.run(
            [*command, "--workspace", str(ws.root)],
            stdout=subprocess.PIPE,
            stderr=follower,
            stdin=subprocess.DEVNULL,
            env=clean_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
    reader.join(timeout=10)
    os.close(leader)
    assert done.returncode == 0
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    progress = [line for line in lines if re.match(r"  run \d+: case [a-n] trial [12] \(", line)]
    assert len(progress) == 56, lines  # 28 runs of v1 and 28 of r1.p1, on the cases and held out
    assert [line.split(":", 1)[0] for line in progress] == [f"  run {n}" for n in range(1, 57)]
    assert "  run 1: case a trial 1 (live): 1.00" in progress
    assert "  run 2: case b trial 1 (live): 0.00" in progress
    assert sum(line.endswith("(a proposal): 1.00") for line in progress) == 28
    assert "  run 1: " not in done.stdout.decode()
