"""Workspace.run on a real workspace in tmp_path: one stored row per run, sandboxes, provenance, budgets."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from helpers.git import git

from machine import (
    Budget,
    BudgetExceeded,
    Case,
    HarnessRequest,
    HarnessResult,
    Machine,
    SQLiteStore,
    ToolContext,
    UnknownPriceError,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    judge,
    open_workspace,
    tool,
)
from machine.clients.echo import EchoHarness
from machine.clients.scripted import Script, ScriptedHarness

PLAIN_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="plain",
    intent="Repeat the input.",
    instructions="Repeat the input.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
)
"""


def greeter(**overrides: Any) -> Machine:
    rubric = define_rubric(
        {"greets": {"description": "Says hello.", "weight": 2}, "warm": "Sounds friendly."}
    )
    evaluator = define_evaluator(
        rubric, {"greets": check("says_hello", lambda run: "hello" in run.output.lower()), "warm": judge()}
    )
    args: dict[str, Any] = {
        "name": "greet",
        "intent": "Greet people.",
        "instructions": "Say hello.",
        "model": "echo",
        "rubric": rubric,
        "evaluator": evaluator,
    }
    args.update(overrides)
    return define_machine(**args)


def scripted(rules: list[dict[str, Any]]) -> ScriptedHarness:
    return ScriptedHarness(Script.model_validate({"rules": rules}))


def rows(root: Path) -> int:
    """Runs stored in the workspace at ``root``; 0 when nothing has created the store yet."""
    db = root / ".machine" / "store.db"
    if not db.exists():
        return 0
    store = SQLiteStore(db)
    try:
        return store.count()
    finally:
        store.close()


class RecordingHarness:
    """A harness that notes whether it was called; named like a remote one when asked."""

    def __init__(self, name: str = "echo") -> None:
        self.name = name
        self.calls = 0

    async def run(self, request: HarnessRequest) -> HarnessResult:
        self.calls += 1
        return await EchoHarness().run(request)


# --- one row per run, graded when asked ----------------------------------------------------------


async def test_run_stores_exactly_one_ungraded_row(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    run = await ws.run(greeter(), "hello there")
    assert rows(tmp_path) == 1
    assert run.status == "ok"
    assert run.output == "hello there"
    assert run.scorecard is None
    stored = ws.store.get(run.id)
    assert stored == run
    assert stored.harness == "echo"
    assert stored.machine == "greet"
    assert stored.timings.finished_at is not None


async def test_run_with_grade_stores_the_scorecard_in_the_same_row(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    run = await ws.run(greeter(), "hello there", grade=True)
    assert rows(tmp_path) == 1
    stored = ws.store.get(run.id)
    assert stored.scorecard is not None
    assert stored.scorecard.criteria["greets"].score == 1.0
    assert stored.scorecard.criteria["warm"].score is None  # judge() is UNSCORED in this build
    assert stored.score == 1.0  # the unscored criterion is kept out of the weighted total
    assert stored.passed is None  # ... and could still fail the run: no pass is claimed


async def test_each_run_adds_one_row(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    ids = [(await ws.run(greeter(), f"hello {n}", grade=n % 2 == 0)).id for n in range(4)]
    assert rows(tmp_path) == 4
    assert len(set(ids)) == 4
    assert [r.id for r in ws.store.runs("greet", 10)] == ids[::-1]


async def test_grade_of_a_stored_run_updates_its_row(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    run = await ws.run(greeter(), "goodbye")
    graded = await ws.grade(run, greeter(), pass_score=0.5)
    assert rows(tmp_path) == 1
    stored = ws.store.get(run.id)
    assert stored.scorecard == graded.scorecard
    assert stored.score == 0.0
    assert stored.scorecard is not None and stored.scorecard.pass_score == 0.5


async def test_harness_failure_is_a_stored_error_run_and_not_graded(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=scripted([{"match": "^known$", "turns": [{"text": "hello"}]}]))
    run = await ws.run(greeter(), "something else", grade=True)
    assert rows(tmp_path) == 1
    assert run.status == "error"
    assert run.error is not None and "no rule" in run.error
    assert run.scorecard is None
    assert ws.store.get(run.id).status == "error"


# --- sandboxes ----------------------------------------------------------------------------------


def sandbox_machine(seen: list[dict[str, Any]]) -> Machine:
    @tool
    def look(ctx: ToolContext) -> str:
        """List the files of the run's sandbox."""
        assert ctx.sandbox is not None
        files = sorted(
            str(p.relative_to(ctx.sandbox.path)) for p in ctx.sandbox.path.rglob("*") if p.is_file()
        )
        seen.append(
            {
                "run_id": ctx.run_id,
                "sandbox": ctx.sandbox.path,
                "is_dir": ctx.sandbox.path.is_dir(),
                "files": {name: (ctx.sandbox.path / name).read_text() for name in files},
            }
        )
        (ctx.sandbox.path / "made-by-tool.txt").write_text("x")
        return ", ".join(files) or "empty"

    return greeter(tools=[look])


LOOK = scripted([{"match": ".", "turns": [{"tool_calls": [{"name": "look"}]}, {"text": "hello"}]}])


async def test_a_tool_using_run_gets_its_own_sandbox_removed_after(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    ws = open_workspace(tmp_path, harness=LOOK)
    run = await ws.run(sandbox_machine(seen), "look around")
    assert run.status == "ok"
    assert run.tool_results[0].is_error is False
    assert len(seen) == 1
    assert seen[0]["run_id"] == run.id
    assert seen[0]["sandbox"] == tmp_path.resolve() / ".machine" / "sandboxes" / run.id
    assert seen[0]["is_dir"] is True
    assert not seen[0]["sandbox"].exists()


async def test_keep_sandboxes_keeps_the_folder(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    ws = open_workspace(tmp_path, harness=LOOK, keep_sandboxes=True)
    run = await ws.run(sandbox_machine(seen), "look around")
    sandbox = tmp_path.resolve() / ".machine" / "sandboxes" / run.id
    assert seen[0]["sandbox"] == sandbox
    assert (sandbox / "made-by-tool.txt").read_text() == "x"


async def test_each_run_gets_a_different_sandbox(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    ws = open_workspace(tmp_path, harness=LOOK)
    spec = sandbox_machine(seen)
    first = await ws.run(spec, "one")
    second = await ws.run(spec, "two")
    assert [s["sandbox"].name for s in seen] == [first.id, second.id]
    assert seen[1]["files"] == {}  # nothing the first run wrote is left for the second


async def test_case_files_are_seeded_into_the_sandbox(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    ws = open_workspace(tmp_path, harness=LOOK)
    case = Case(id="c1", input="look", files={"notes.txt": "remember this", "sub/deep.txt": "deep"})
    run = await ws.run(sandbox_machine(seen), case.input, case=case, trial=0)
    assert seen[0]["files"] == {"notes.txt": "remember this", "sub/deep.txt": "deep"}
    assert run.case_id == "c1"
    assert run.trial == 0
    assert run.case is not None and run.case["files"] == case.files
    assert not seen[0]["sandbox"].exists()


async def test_a_machine_without_tools_or_files_gets_no_sandbox(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness())
    await ws.run(greeter(), "hello")
    assert not (tmp_path / ".machine" / "sandboxes").exists()


# --- provenance ---------------------------------------------------------------------------------


def git_workspace(root: Path) -> str:
    """A committed workspace with one machine; returns the commit sha."""
    (root / "machines" / "plain").mkdir(parents=True)
    (root / "machines" / "plain" / "machine.py").write_text(PLAIN_PY)
    (root / "README.md").write_text("a workspace\n")
    (root / ".gitignore").write_text(".machine/\n__pycache__/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return git(root, "rev-parse", "HEAD").strip()


async def test_run_records_the_library_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    run = await open_workspace(tmp_path, harness=EchoHarness()).run(greeter(), "hello")
    assert run.library_version == metadata.version("machine")
    assert run.revision is None  # not a git checkout
    assert SQLiteStore.in_workspace(tmp_path).get(run.id).library_version == run.library_version


async def test_run_records_the_commit_of_a_clean_checkout(tmp_path: Path) -> None:
    sha = git_workspace(tmp_path)
    run = await open_workspace(tmp_path, harness=EchoHarness()).run("plain", "hello")
    assert run.revision == sha
    assert len(sha) == 40
    (tmp_path / "README.md").write_text("changed outside machines/\n")
    assert (await open_workspace(tmp_path, harness=EchoHarness()).run("plain", "hello")).revision == sha


async def test_run_marks_uncommitted_changes_to_machines(tmp_path: Path) -> None:
    sha = git_workspace(tmp_path)
    with (tmp_path / "machines" / "plain" / "machine.py").open("a") as file:
        file.write("# an edit not yet committed\n")
    run = await open_workspace(tmp_path, harness=EchoHarness()).run("plain", "hello")
    assert run.revision == f"{sha}+working-tree"


async def test_an_untracked_machine_marks_the_working_tree(tmp_path: Path) -> None:
    sha = git_workspace(tmp_path)
    (tmp_path / "machines" / "other").mkdir()
    (tmp_path / "machines" / "other" / "machine.py").write_text(PLAIN_PY.replace('"plain"', '"other"'))
    run = await open_workspace(tmp_path, harness=EchoHarness()).run("plain", "hello")
    assert run.revision == f"{sha}+working-tree"


async def test_loading_machines_does_not_mark_a_clean_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_workspace(tmp_path)
    (tmp_path / ".gitignore").write_text(".machine/\n")  # no __pycache__ rule, as in a fresh workspace
    git(tmp_path, "commit", "-q", "-am", "no pycache rule")
    sha = git(tmp_path, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # Python's default, whatever this shell says
    run = await open_workspace(tmp_path, harness=EchoHarness()).run("plain", "hello")
    assert (tmp_path / "machines" / "plain" / "__pycache__").is_dir()
    assert run.revision == sha


# --- budgets ------------------------------------------------------------------------------------


async def test_spent_budget_refuses_before_anything_is_stored(tmp_path: Path) -> None:
    harness = RecordingHarness()
    seen: list[dict[str, Any]] = []
    ws = open_workspace(tmp_path, harness=harness, budget=Budget(0.0))
    with pytest.raises(BudgetExceeded, match=r"budget of \$0\.0000 is spent"):
        await ws.run(sandbox_machine(seen), "hello")
    assert harness.calls == 0
    assert rows(tmp_path) == 0
    assert seen == []
    assert not (tmp_path / ".machine" / "sandboxes").exists()


async def test_budget_spent_by_earlier_runs_refuses_the_next(tmp_path: Path) -> None:
    costly = scripted([{"match": ".", "turns": [{"text": "hello", "usage": {"input_tokens": 100_000}}]}])
    ws = open_workspace(tmp_path, harness=costly, budget=Budget(0.1))
    spec = greeter(model="Qwen/Qwen3.8-27B")
    first = await ws.run(spec, "hello")
    assert first.cost_usd == pytest.approx(100_000 * 1.86 / 1_000_000)
    assert ws.budget.spent == pytest.approx(first.cost_usd)
    with pytest.raises(BudgetExceeded):
        await ws.run(spec, "hello again")
    assert rows(tmp_path) == 1


async def test_unknown_price_of_a_remote_model_is_refused_before_the_call(tmp_path: Path) -> None:
    harness = RecordingHarness(name="tinker")
    ws = open_workspace(tmp_path, harness=harness, budget=Budget(1.0))
    with pytest.raises(UnknownPriceError, match="no known price"):
        await ws.run(greeter(model="someone/unpriced-checkpoint"), "hello")
    assert harness.calls == 0
    assert rows(tmp_path) == 0


async def test_price_as_lets_a_checkpoint_run_under_a_budget(tmp_path: Path) -> None:
    harness = RecordingHarness(name="tinker")
    budget = Budget(1.0, price_as={"someone/unpriced-checkpoint": "Qwen/Qwen3.8-27B"})
    run = await open_workspace(tmp_path, harness=harness, budget=budget).run(
        greeter(model="someone/unpriced-checkpoint"), "hello"
    )
    assert harness.calls == 1
    assert run.model == "someone/unpriced-checkpoint"
    assert rows(tmp_path) == 1


async def test_echo_is_free_whatever_the_model(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness(), budget=Budget(0.01))
    run = await ws.run(greeter(model="someone/unpriced-checkpoint"), "hello")
    assert run.status == "ok"
    assert run.cost_usd == 0.0
    assert ws.budget.spent == 0.0


async def test_model_override_is_recorded(tmp_path: Path) -> None:
    run = await open_workspace(tmp_path, harness=EchoHarness()).run(
        greeter(), "hello", model="Qwen/Qwen3.6-27B"
    )
    assert run.model == "Qwen/Qwen3.6-27B"


# --- machines by name ---------------------------------------------------------------------------


async def test_run_by_name_loads_from_the_machines_folder(tmp_path: Path) -> None:
    (tmp_path / "machines" / "plain").mkdir(parents=True)
    (tmp_path / "machines" / "plain" / "machine.py").write_text(PLAIN_PY)
    ws = open_workspace(tmp_path, harness=EchoHarness())
    assert ws.names() == ["plain"]
    run = await ws.run("plain", "hi", grade=True)
    assert run.machine == "plain"
    assert run.instructions == "Repeat the input."
    assert run.score == 1.0


def test_workspace_root_follows_machine_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_WORKSPACE", str(tmp_path))
    assert open_workspace().root == tmp_path.resolve()
    other = tmp_path / "other"
    other.mkdir()
    assert open_workspace(other).root == other.resolve()
