"""Changes to the host's project over MCP: ``machine serve`` started inside a temporary git project, over
real stdio, hands a task to a scripted dev machine that edits app.py, writes a new file and a file
holding escape sequences. A client with elicitation is asked about each change (the diff, made inert) and
the change is made exactly as shown only after its yes; a no leaves the file byte for byte and the model
is told; a client without elicitation has every change refused, unless the server was started with
``--edits auto``, the person's allowance for edits. Each decision is kept on the run's tool results."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.dev_project import HOSTILE, ORIGINAL, setup
from helpers.env import MACHINE_BIN, clean_env
from mcp import Client, StdioServerParameters
from mcp_types import ElicitRequestParams, ElicitResult

from machine.ops import SpendingPolicy
from machine.runs import EditProposal, Message, SQLiteStore
from machine.server._edits import EditChoice, ProjectEdits, question
from machine.server.app import build_server
from machine.workspace import set_observing

LIMIT = 90
TASK = {"name": "dev", "input": "change it", "budget_usd": 1}
DECLINED = "the person declined this change; nothing was written"
ALLOWANCE = {"MACHINE_ALLOW_SPEND_USD": "1"}
"""Consent to spend for a client without elicitation (the scripted harness spends nothing)."""
Answer = Callable[[str], ElicitResult]


def serve(ws: Path, script: Path, project: Path, *more: str, env: dict[str, str] | None = None) -> Any:
    args = ["serve", "--workspace", str(ws), "--harness", "scripted", "--script", str(script), *more]
    return StdioServerParameters(command=str(MACHINE_BIN), args=args, env=clean_env(env), cwd=str(project))


async def ask(params: Any, answer: Answer | None = None) -> tuple[Any, list[str]]:
    """``ask_machine`` over stdio; ``answer`` (None: a client without elicitation) answers each form
    about a change, after the yes to the spending question. Returns the result and the forms' messages."""
    shown: list[str] = []

    async def elicited(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        if params.message.startswith("Run machine 'dev' once"):
            return ElicitResult(action="accept", content={"approve": True})
        assert answer is not None
        shown.append(params.message)
        return answer(params.message)

    with anyio.fail_after(LIMIT):
        callback = {} if answer is None else {"elicitation_callback": elicited}
        async with Client(params, mode="legacy", **callback) as client:
            result = await client.call_tool("ask_machine", TASK)
    assert not result.is_error, result.content
    return result.structured_content, shown


def tool_results(ws: Path, run_id: str) -> list[Message]:
    store = SQLiteStore.in_workspace(ws)
    try:
        run = store.get(run_id)
    finally:
        store.close()
    return [m for m in run.trajectory if m.role == "tool"]


def diff_of(message: str) -> str:
    """The diff a form showed: between its heading and the choices."""
    return message.split("\n\n", 2)[1] + "\n"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, script, folder = setup(tmp_path)
    set_observing(ws / ".machine", True)  # the run is kept, to read its trajectory
    return ws, script, folder


async def test_a_yes_makes_exactly_the_change_shown(project: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ws, script, folder = project
    data, shown = await ask(
        serve(ws, script, folder), lambda _: ElicitResult(action="accept", content={"answer": "yes"})
    )
    assert len(shown) == 3 and shown[0].startswith(
        f"Machine 'dev' wants to change app.py in your project {folder}:"
    )
    replay = tmp_path / "replay"  # the shown diff, applied to the file as it was, gives the file as it is
    replay.mkdir()
    (replay / "app.py").write_text(ORIGINAL)
    (replay / "change.diff").write_text(diff_of(shown[0]))
    subprocess.run(["git", "apply", "change.diff"], cwd=replay, check=True, timeout=30)
    assert (folder / "app.py").read_bytes() == (replay / "app.py").read_bytes() != ORIGINAL.encode()
    assert (folder / "notes" / "new.txt").read_text() == "a new file\n"
    assert (folder / "shown.txt").read_text() == HOSTILE
    assert data["kept"] and data["output"] == "done"
    edits = [e for r in tool_results(ws, data["run_id"]) for e in r.edits]
    assert [(e.tool, e.path, e.decision, e.by) for e in edits] == [
        ("edit_file", "app.py", "approved", "elicitation"),
        ("write_file", "notes/new.txt", "approved", "elicitation"),
        ("write_file", "shown.txt", "approved", "elicitation"),
    ]
    assert edits[0].diff == diff_of(shown[0])
    assert [(e["path"], e["decision"], e["by"]) for e in data["edits"]] == [
        (e.path, e.decision, e.by) for e in edits
    ]


async def test_a_no_leaves_the_file_and_the_model_is_told(project: tuple[Path, Path, Path]) -> None:
    ws, script, folder = project
    answers = iter(
        [
            ElicitResult(action="accept", content={"answer": "no"}),
            ElicitResult(action="decline"),
            ElicitResult(action="cancel"),
        ]
    )
    data, shown = await ask(serve(ws, script, folder), lambda _: next(answers))
    assert len(shown) == 3
    assert (folder / "app.py").read_bytes() == ORIGINAL.encode()
    assert not (folder / "notes").exists() and not (folder / "shown.txt").exists()
    results = tool_results(ws, data["run_id"])
    assert [(r.content, r.is_error) for r in results] == [(DECLINED, True)] * 3
    assert [(e.decision, e.by) for r in results for e in r.edits] == [("declined", "elicitation")] * 3


async def test_escape_sequences_reach_the_form_inert(project: tuple[Path, Path, Path]) -> None:
    ws, script, folder = project
    _, shown = await ask(
        serve(ws, script, folder), lambda _: ElicitResult(action="accept", content={"answer": "no"})
    )
    hostile = shown[2]
    assert "+␛]0;owned\\x07␛[2Jcleared" in hostile
    assert not any(c in message for message in shown for c in ("\x1b", "\x07"))
    assert not (folder / "shown.txt").exists()


async def test_all_makes_the_rest_unasked_and_quit_stops(project: tuple[Path, Path, Path]) -> None:
    ws, script, folder = project
    data, shown = await ask(
        serve(ws, script, folder), lambda _: ElicitResult(action="accept", content={"answer": "all"})
    )
    assert len(shown) == 1 and (folder / "shown.txt").read_text() == HOSTILE
    assert [e["by"] for e in data["edits"]] == ["elicitation", "all", "all"]
    for path in (folder / "app.py", folder / "notes" / "new.txt", folder / "shown.txt"):
        path.unlink() if path.name != "app.py" else path.write_text(ORIGINAL)
    data, shown = await ask(
        serve(ws, script, folder), lambda _: ElicitResult(action="accept", content={"answer": "quit"})
    )
    assert len(shown) == 1 and (folder / "app.py").read_text() == ORIGINAL
    assert not (folder / "notes" / "new.txt").exists()
    assert [e["decision"] for e in data["edits"]] == ["declined"]
    assert tool_results(ws, data["run_id"])[-1].content.startswith("the person stopped the run")


async def test_a_client_without_elicitation_changes_nothing(project: tuple[Path, Path, Path]) -> None:
    ws, script, folder = project
    said = {}
    for mode in ("ask", "deny"):
        data, _ = await ask(serve(ws, script, folder, "--edits", mode, env=ALLOWANCE))
        assert (folder / "app.py").read_bytes() == ORIGINAL.encode()
        assert not (folder / "notes").exists() and not (folder / "shown.txt").exists()
        results = tool_results(ws, data["run_id"])
        assert all(r.is_error and "nothing was written" in r.content for r in results)
        assert [(e.decision, e.by) for r in results for e in r.edits] == [("declined", "policy")] * 3
        said[mode] = results[0].content
    assert "nobody can be asked" in said["ask"] and "refuses every change" in said["deny"]


async def test_edits_auto_is_the_allowance_for_edits(project: tuple[Path, Path, Path]) -> None:
    ws, script, folder = project
    data, _ = await ask(serve(ws, script, folder, "--edits", "auto", env=ALLOWANCE))
    assert (folder / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert (folder / "shown.txt").read_text() == HOSTILE
    assert data["edits"] == [] and all(not r.is_error for r in tool_results(ws, data["run_id"]))


def test_the_start_line_says_which_folder_runs_change(project: tuple[Path, Path, Path]) -> None:
    ws, _, folder = project
    started = subprocess.run(
        [str(MACHINE_BIN), "serve", "--workspace", str(ws)],
        cwd=folder, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert started.stdout == ""
    assert f"ask_machine's runs work on the real files of {folder}, not on a copy" in started.stderr
    in_workspace = subprocess.run(
        [str(MACHINE_BIN), "serve", "--workspace", str(ws)],
        cwd=ws, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert "real files" not in in_workspace.stderr
    printed = subprocess.run(
        [str(MACHINE_BIN), "serve", "--print-config", "cursor", "--edits", "auto", "--workspace", str(ws)],
        env=clean_env(), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(printed.stdout)["mcpServers"]["machine"]["args"][-2:] == ["--edits", "auto"]


def test_the_form_cuts_a_long_change_and_defaults_to_no() -> None:
    long = EditProposal(tool="write_file", path="big.txt", before=None, after="x\n" * 40_000)
    said = question("dev", Path("/p"), long)
    assert "more characters not shown" in said and len(said) < 60_000
    assert ProjectEdits().mode == "ask" and EditChoice().answer == "no"


async def test_an_unanswered_question_stops_the_run(
    project: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A form nobody answers is not waited on forever: the run stops there and writes nothing."""
    ws, script, folder = project
    monkeypatch.setattr("machine.server._edits.ANSWER_WITHIN_S", 0.5)
    policy = SpendingPolicy(allowance=None, log_path=ws / ".machine" / "spending.jsonl")
    server = build_server(ws, harness="scripted", script=script, policy=policy, project=folder)

    async def away(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        if params.message.startswith("Run machine 'dev' once"):
            return ElicitResult(action="accept", content={"approve": True})
        await anyio.sleep(5)
        return ElicitResult(action="accept", content={"answer": "yes"})

    with anyio.fail_after(LIMIT):
        async with Client(server, mode="legacy", elicitation_callback=away) as client:
            result = await client.call_tool("ask_machine", TASK)
    data = result.structured_content
    assert not result.is_error and data is not None
    assert [(e["path"], e["decision"], e["by"]) for e in data["edits"]] == [("app.py", "declined", "timeout")]
    assert (folder / "app.py").read_bytes() == ORIGINAL.encode() and not (folder / "notes").exists()
