"""The gate on changes to a person's files, on its own: what each answer does, what a refusal by policy
says, what is kept of each decision; and the diff a person is shown, exact however large the change."""

from __future__ import annotations

import anyio
import pytest

from machine.runs import EditAnswer, EditGate, EditProposal
from machine.runs._edits import DECLINED, STOPPED


def proposal(path: str = "a.py") -> EditProposal:
    return EditProposal(tool="write_file", path=path, before="x = 1\n", after="x = 2\n")


def answers(*choices: str) -> EditGate:
    said = iter(choices)

    async def approve(_: EditProposal) -> EditAnswer:
        return EditAnswer(next(said), by="terminal")  # type: ignore[arg-type]

    return EditGate("ask", approve)


def test_each_answer() -> None:
    gate = answers("no", "yes", "all")
    assert anyio.run(gate.refusal, proposal()) == DECLINED
    assert anyio.run(gate.refusal, proposal()) is None
    assert anyio.run(gate.refusal, proposal()) is None
    assert anyio.run(gate.refusal, proposal("b.py")) is None  # "all": not asked again (no answer left)
    kept = [(r.path, r.decision, r.by) for r in gate.take()]
    assert kept == [("a.py", "declined", "terminal"), ("a.py", "approved", "terminal"),
                    ("a.py", "approved", "terminal"), ("b.py", "approved", "all")]  # fmt: skip
    assert gate.take() == []


def test_quit_stops_every_change_after_it() -> None:
    gate = answers("quit")
    assert anyio.run(gate.refusal, proposal()) == STOPPED and gate.stopped
    assert anyio.run(gate.refusal, proposal()) == STOPPED
    assert [r.decision for r in gate.take()] == ["declined", "declined"]


def test_a_refusal_by_policy_says_why() -> None:
    denied = anyio.run(EditGate("deny").refusal, proposal())
    assert denied is not None and "refuses every change" in denied
    nobody = anyio.run(EditGate("ask").refusal, proposal())
    assert nobody is not None and "nobody can be asked" in nobody
    assert anyio.run(EditGate("auto").refusal, proposal()) is None


def test_the_diff_is_the_change() -> None:
    assert proposal().diff == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    new = EditProposal(tool="write_file", path="n.txt", after="one\ntwo")
    assert (
        new.diff == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n"
    )
    assert EditProposal(tool="run", command="rm -rf build").diff == "$ rm -rf build"


def test_a_change_too_large_to_match_is_shown_whole_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past what difflib's matching may take on (its time grows with before times after), the change is
    written out whole, without difflib."""

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("difflib matched a change too large for it")

    monkeypatch.setattr("machine.runs._edits.difflib.unified_diff", refused)
    before = "".join(f"old {i}\n" for i in range(5_000))
    after = "head\n" + "".join(f"new {i}\n" for i in range(5_000))
    diff = EditProposal(tool="write_file", path="big.txt", before=before, after=after).diff
    lines = diff.splitlines(keepends=True)
    assert lines[2] == "@@ -1,5000 +1,5001 @@\n"
    assert "".join(line[1:] for line in lines[3:] if line.startswith("-")) == before
    assert "".join(line[1:] for line in lines[3:] if line.startswith("+")) == after
