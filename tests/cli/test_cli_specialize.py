"""``machine specialize dev`` through the real console script, on a copy of this repository's ``dev`` (and
``coder``, whose steps it reads). One script plays both sides: the author's replies from
machines/dev/author.json come first (each of its briefs says what it asks for), then dev's own rules,
which make the sample runs. The author writes a child ``dev/edge`` graded with hidden tests and five
project cases, each a one-line function in calc.py with a test and a hidden test: ``double`` and
``halve`` hold up; ``square``'s tests pass before the fix, ``negate``'s fix does not make them pass, and
``inc``'s hidden test passes before the fix. What is kept, what is discarded and why is known exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap
from helpers.bwrap import needs_bubblewrap

if TYPE_CHECKING:
    from conftest import Command

REPO = Path(__file__).resolve().parents[2]
pytestmark = [m for m in needs_bubblewrap() if m.name != "anyio"]  # a plain test, not async


def script() -> dict[str, Any]:
    """machines/dev/author.json (the author's replies) with dev's own rules after it (its sample runs)."""
    author = json.loads((REPO / "machines" / "dev" / "author.json").read_text(encoding="utf-8"))["rules"]
    dev = json.loads((REPO / "machines" / "dev" / "script.json").read_text(encoding="utf-8"))["rules"]
    return {"rules": author + dev}


@pytest.mark.slow
def test_specialize_dev_keeps_only_cases_whose_tests_hold_and_writes_their_hidden_tests(
    tmp_path: Path, machine_cmd: Command
) -> None:
    root = tmp_path / "ws"
    for name in ("dev", "coder"):
        shutil.copytree(REPO / "machines" / name, root / "machines" / name)
    (tmp_path / "script.json").write_text(json.dumps(script()), encoding="utf-8")
    done = machine_cmd(
        "specialize", "dev", "--focus", "edge cases of small helpers", "--slug", "edge", "--cases", "2",
        "--harness", "scripted", "--script", tmp_path / "script.json", "--json", "--workspace", root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["accepted"] and report["stopped"] is None
    assert [a["outcome"] for a in report["attempts"]] == ["accepted"]
    assert len(report["samples"]) == 3  # dev had no stored runs: three of its cases were run first
    verdicts = {v["id"]: v for v in report["cases"]}
    assert [i for i, v in verdicts.items() if v["kept"]] == ["double-case", "halve-case"]
    assert "pass" in verdicts["square-case"]["reason"] and "before" in verdicts["square-case"]["reason"]
    assert "with the reference" in verdicts["negate-case"]["reason"]
    assert "test_edge_calc.py" in verdicts["inc-case"]["reason"]
    assert (report["kept_cases"], report["holdout_cases"], report["hidden_cases"]) == (1, 1, 2)
    folder = root / "machines" / "dev" / "edge"
    kept = json.loads((folder / "cases.json").read_text()) + json.loads((folder / "holdout.json").read_text())
    assert sorted(c["id"] for c in kept) == ["double-case", "halve-case"]
    assert all("hidden" not in c for c in kept)  # never shown to the machine
    hidden = json.loads((folder / "hidden.json").read_text())
    assert set(hidden) == {"double-case", "halve-case"}
    assert set(hidden["double-case"]["files"]) == {"test_edge_calc.py"}

    assert report["vetted"] and report["untrusted"] == [
        "machines/dev/edge/machine.py",
        "machines/dev/edge/rubric.py",
    ]
    assert report["next_steps"][0].startswith("trust dev/edge")
    refused = machine_cmd("show", "dev/edge", "--workspace", root)
    assert refused.returncode == 2 and "`machine trust dev/edge`" in refused.stderr
    assert machine_cmd("trust", "dev/edge", "--yes", "--workspace", root).returncode == 0
    shown = machine_cmd("show", "dev/edge", "--workspace", root)
    assert shown.returncode == 0, shown.stderr
    assert "edge_cases" in shown.stdout and "verified" in shown.stdout  # its own criterion and dev's
