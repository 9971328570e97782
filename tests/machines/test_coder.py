"""coder: ran_a_file read from the real tool results, the step helpers dev and julia share with it, and
its scripted suite writing and running real Python under bubblewrap."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.env import on_ci

from machine import Message, Run, ToolCall, ToolContext, Workspace, run_suite
from machine.clients.scripted import ScriptedHarness
from machine.sandboxes import LocalSandbox, bubblewrap
from machine.sandboxes.tools import run as run_tool

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "machines" / "coder"

ON_CI = on_ci()
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap() is None and not ON_CI,
    reason="bubblewrap (bwrap) is missing or cannot make namespaces here; `make test` installs it",
)


def require_bubblewrap() -> None:
    if bubblewrap() is None:  # reached only under CI=true, where the isolated runs must be tested
        pytest.fail("CI=true and bubblewrap does not work here: coder's runs must be tested for real")


@pytest.fixture
def steps(ws: Workspace) -> ModuleType:
    package = sys.modules[ws.load("coder").evaluator.graders["ran_a_file"].fn.__module__].__package__  # type: ignore[attr-defined]
    return sys.modules[f"{package}.steps"]


def result(code: int | None, stdout: str = "", stderr: str = "") -> str:
    head = (
        "timed out after 60 s: the command and every process it started were killed"
        if code is None
        else f"exit code: {code}"
    )
    return f"{head}\n--- stdout ---\n{stdout or '(empty)'}\n--- stderr ---\n{stderr or '(empty)'}"


WROTE = "wrote 120 bytes to primes.py (new file)"


def make_run(calls: list[tuple[str, dict[str, Any], str, bool]], machine: str = "coder") -> Run:
    trajectory = [Message(role="user", content="Print the primes below 50.")]
    for index, (name, arguments, text, is_error) in enumerate(calls):
        call = ToolCall(id=f"c{index}", name=name, arguments=arguments)
        trajectory.append(Message(role="assistant", tool_calls=[call]))
        trajectory.append(
            Message(role="tool", tool_call_id=call.id, name=name, content=text, is_error=is_error)
        )
    trajectory.append(Message(role="assistant", content="Done."))
    return Run(
        machine=machine,
        model="echo",
        harness="echo",
        input="Print the primes below 50.",
        output="Done.",
        trajectory=trajectory,
    )


def write(path: str = "primes.py", ok: bool = True) -> tuple[str, dict[str, Any], str, bool]:
    text = WROTE if ok else f"refused {path!r}: paths must stay inside the working directory"
    return ("write_file", {"path": path, "content": "print(2)\n"}, text, not ok)


def run(command: str, code: int | None = 0, refused: bool = False) -> tuple[str, dict[str, Any], str, bool]:
    if refused:
        return ("run", {"command": command}, "run is refused here: ... this sandbox is not isolated", True)
    return ("run", {"command": command}, result(code, "2\n3"), False)


# --- the step helpers -------------------------------------------------------------------------------------


def test_exit_code_is_read_from_the_head_only(steps: ModuleType) -> None:
    assert steps.exit_code(result(0)) == 0
    assert steps.exit_code(result(3)) == 3
    assert steps.exit_code(result(-9)) == -9
    assert steps.exit_code(result(None)) is None
    assert steps.exit_code(result(1, stdout="exit code: 0")) == 1  # output cannot fake it
    assert steps.exit_code("no exit code here") is None
    assert steps.exit_code("") is None


def test_output_sections(steps: ModuleType) -> None:
    text = result(0, "a\nb", "warn")
    assert steps.output_section(text, "stdout") == "a\nb"
    assert steps.output_section(text, "stderr") == "warn"
    assert steps.output_section(result(0), "stdout") == ""


@pytest.mark.parametrize(
    ("command", "path", "expected"),
    [
        ("python3 primes.py", "primes.py", True),
        ("python3 ./primes.py", "primes.py", True),
        ("python3 /work/primes.py", "primes.py", True),
        ("python3 primes.py > out.txt && cat out.txt", "./primes.py", True),
        ("cd src && python3 main.py", "src/main.py", True),
        ("python3 src/main.py", "/work/src/main.py", True),
        ("python3 -m unittest", "primes.py", False),
        ("python3 primes.pyc", "primes.py", False),
        ("python3 myprimes.py", "primes.py", False),
        ("python3 primes_test.py", "primes.py", False),
        ("cat other/primes.py.bak", "primes.py", False),
    ],
)
def test_mentions(steps: ModuleType, command: str, path: str, expected: bool) -> None:
    assert steps.mentions(command, path) is expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 primes.py", True),
        ("cat primes.py && python3 primes.py", True),
        ("python3 primes.py | tail -1", True),
        ("PYTHONHASHSEED=0 python3 primes.py", True),
        ("chmod +x run.sh && ./run.sh", False),  # names run.sh, not primes.py
        ("sh -c 'python3 primes.py'", True),
        ("cat primes.py", False),
        ("ls primes.py; wc -l primes.py", False),
        ("cp primes.py backup.py", False),
    ],
)
def test_runs_file(steps: ModuleType, command: str, expected: bool) -> None:
    assert steps.runs_file(command, "primes.py") is expected


def test_files_at_replays_successful_changes(steps: ModuleType) -> None:
    calls = [
        ("write_file", {"path": "./a.py", "content": "x = 1\n"}, "wrote", False),
        ("edit_file", {"path": "a.py", "old": "x = 1", "new": "x = 2"}, "replaced 1 occurrence", False),
        ("edit_file", {"path": "a.py", "old": "x = 2", "new": "x = 3"}, "old was not found", True),
        ("write_file", {"path": "/work/b.py", "content": "y\n"}, "wrote", False),
    ]
    run = make_run(calls).model_copy(update={"case": {"id": "c", "input": "", "files": {"c.py": "c\n"}}})
    assert steps.files_at(run) == {"a.py": "x = 2\n", "b.py": "y\n", "c.py": "c\n"}
    assert steps.files_at(run, before=1) == {"a.py": "x = 1\n", "c.py": "c\n"}
    assert [s.argument("path") for s in steps.changes(run)] == ["./a.py", "a.py", "/work/b.py"]


# --- ran_a_file -------------------------------------------------------------------------------------------


async def ran_a_file(ws: Workspace, calls: list[Any]) -> tuple[float | None, str]:
    graded = await ws.grade(make_run(calls), store=False)
    assert graded.scorecard is not None
    found = graded.scorecard.criteria["ran_a_file"]
    return found.score, found.reason


@pytest.mark.parametrize(
    ("calls", "score", "reason"),
    [
        ([write(), run("python3 primes.py")], 1.0, "wrote primes.py and `python3 primes.py` exited 0"),
        (
            [write("./primes.py"), run("python3 /work/primes.py")],
            1.0,
            "wrote ./primes.py and `python3 /work/primes.py` exited 0",
        ),
        (
            [write(), run("python3 primes.py", 1), run("python3 primes.py")],
            1.0,
            "wrote primes.py and `python3 primes.py` exited 0",
        ),
        (
            [write(), run("python3 primes.py", 1)],
            0.0,
            "ran primes.py with `python3 primes.py`, which exited 1, and no later run of it passed",
        ),
        (
            [write(), run("python3 primes.py", None)],
            0.0,
            "ran primes.py with `python3 primes.py`, which timed out, and no later run of it passed",
        ),
        (
            [write(), run("python3 primes.py", refused=True)],
            0.0,
            "ran primes.py with `python3 primes.py`, which was refused (run is refused here: ... this "
            "sandbox is not isolated), and no later run of it passed",
        ),
        (
            [run("python3 primes.py"), write()],
            0.0,
            "wrote primes.py, but no run command after the write runs it",
        ),
        (
            [write(), run("python3 other.py")],
            0.0,
            "wrote primes.py, but no run command after the write runs it",
        ),
        ([write(), run("echo hi")], 0.0, "wrote primes.py, but no run command after the write runs it"),
        ([write(), run("cat primes.py")], 0.0, "wrote primes.py, but no run command after the write runs it"),
        (
            [write(), run("ls -l primes.py && echo primes.py")],
            0.0,
            "wrote primes.py, but no run command after the write runs it",
        ),
        (
            [write(), run("python3 primes.py | head -3")],
            1.0,
            "wrote primes.py and `python3 primes.py | head -3` exited 0",
        ),
        ([write()], 0.0, "wrote primes.py but never ran it with run"),
        ([write("../x.py", ok=False), run("python3 ../x.py")], 0.0, "no write_file call succeeded"),
        ([run("python3 -c 'print(2)'")], 0.0, "wrote no file with write_file"),
        ([], 0.0, "wrote no file with write_file"),
    ],
)
async def test_ran_a_file(ws: Workspace, calls: list[Any], score: float, reason: str) -> None:
    assert await ran_a_file(ws, calls) == (score, reason)


async def test_a_claim_in_the_reply_counts_for_nothing(ws: Workspace) -> None:
    run = make_run([write()]).model_copy(update={"output": "I ran primes.py: exit code: 0"})
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    assert graded.scorecard.criteria["ran_a_file"].score == 0.0


@needs_bubblewrap
async def test_the_parser_reads_the_real_run_tool(steps: ModuleType, tmp_path: Path) -> None:
    """The format the checks parse is the one the run tool really returns."""
    require_bubblewrap()
    box = LocalSandbox.create(tmp_path / "sandboxes", "r1")
    ctx = ToolContext(run_id="r1", sandbox=box)
    failed = await run_tool.invoke({"command": "echo 'exit code: 0'; echo oops >&2; exit 4"}, ctx)
    assert steps.exit_code(failed) == 4
    assert steps.output_section(failed, "stdout") == "exit code: 0"
    assert steps.output_section(failed, "stderr") == "oops"
    passed = await run_tool.invoke({"command": "true"}, ctx)
    assert steps.exit_code(passed) == 0
    timed_out = await run_tool.invoke({"command": "sleep 5", "timeout_s": 0.2}, ctx)
    assert steps.exit_code(timed_out) is None


# --- the machine, its cases and its scripted suite --------------------------------------------------------


def test_rubric_tools_and_cases(ws: Workspace) -> None:
    coder = ws.load("coder")
    assert list(coder.rubric) == ["ran_a_file", "does_task"]
    assert {n: g.kind for n, g in coder.evaluator.graders.items()} == {
        "ran_a_file": "check",
        "does_task": "judge",
    }
    assert {"write_file", "run"} <= {t.name for t in coder.tools}
    assert "web_fetch" not in {t.name for t in coder.tools}
    assert coder.model == "Qwen/Qwen3.8-27B"
    assert len(ws.cases("coder")) >= 6
    assert len(ws.cases("coder", "holdout.json")) >= 3


def test_the_script_has_a_rule_for_every_case(ws: Workspace) -> None:
    rules = json.loads((CODER / "script.json").read_text(encoding="utf-8"))["rules"]
    specific = rules[:-1]
    for case in ws.cases("coder") + ws.cases("coder", "holdout.json"):
        matching = [r for r in specific if re.search(r["match"], case.input)]
        assert len(matching) == 1, case.id


@needs_bubblewrap
@pytest.mark.parametrize("file", ["cases.json", "holdout.json"])
async def test_scripted_suite_writes_and_runs_real_programs(ws: Workspace, file: str) -> None:
    require_bubblewrap()
    coder = ws.load("coder")
    cases = ws.cases("coder", file)
    report = await run_suite(ws, coder, cases, harness=ScriptedHarness(CODER / "script.json"))
    assert report.errors == 0
    assert report.runs == len(cases)
    stored = {run.case_id: run for run in ws.store.runs("coder", limit=100)}
    for case in cases:
        run = stored[case.id]
        assert run.scorecard is not None
        assert run.scorecard.criteria["ran_a_file"].score == 1.0, run.scorecard.criteria["ran_a_file"].reason
        assert run.scorecard.criteria["does_task"].score is None  # judged: UNSCORED without a judge
        assert [m.name for m in run.tool_results] == ["write_file", "run"]
        assert run.tool_results[1].content.startswith("exit code: 0\n")
    if file == "cases.json":
        primes = stored["primes"].tool_results[1].content
        assert "\n47\n" in primes and "\n49\n" not in primes
        assert "FizzBuzz" in stored["fizzbuzz"].tool_results[1].content
    else:
        assert "steps: 111" in stored["collatz"].tool_results[1].content
    assert not list((ws.data_dir / "sandboxes").glob("*"))  # each run's sandbox was removed
