"""The opencode harness with the real ``opencode`` binary (from npm, pinned by ``make test``) against a
local OpenAI-compatible endpoint that plays scripted tool calls. Nothing leaves 127.0.0.1.

The fake model calls the tools by the names opencode gives them (``machine_<tool>``); the calls reach the
run's own tool server and act in the run's sandbox, and the stored trajectory shows them under our names.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.hosts import host_binary, processes_with
from helpers.openai_server import FakeOpenAI, Item, Recorded, hang, status, text, tool_call

from machine import open_workspace
from machine.clients.hosts.opencode import OpencodeHarness
from machine.runs import parse_effort

ROOT = Path(__file__).resolve().parents[3]
RUN_LIMIT_S = 60.0


@pytest.fixture
def workspace_root(tmp_path: Path) -> Path:
    """A workspace with copies of the machines the tests run."""
    root = tmp_path / "ws"
    for name in ("red", "dev", "coder"):
        shutil.copytree(ROOT / "machines" / name, root / "machines" / name)
    return root


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def harness(fake: FakeOpenAI) -> AsyncIterator[OpencodeHarness]:
    h = OpencodeHarness(binary=host_binary("opencode"), base_url=fake.url + "/v1")
    try:
        yield h
    finally:
        await h.aclose()


def model_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests]


def opencode_processes(temp: Path) -> list[str]:
    """Processes whose private home lies under ``temp``."""
    return processes_with(f"HOME={temp}/")


@pytest.mark.server
async def test_red_calls_reach_our_tool_server_and_the_trajectory_shows_them(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.push(
        tool_call("machine_red_mentioned", {}, prompt_tokens=120, completion_tokens=7),
        text("Flagged it.", prompt_tokens=150, completion_tokens=4, cached_tokens=100),
    )
    ws = open_workspace(workspace_root, harness=harness)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "my favourite colour is red", grade=True)
    assert run.status == "ok", run.error
    assert [m.role for m in run.trajectory] == ["user", "assistant", "tool", "assistant"]
    call = run.trajectory[1].tool_calls[0]
    assert call.name == "red_mentioned" and call.arguments == {}
    result = run.trajectory[2]
    assert result.content == "noted: red was mentioned" and not result.is_error
    assert result.tool_call_id == call.id
    assert run.output == "Flagged it."
    assert run.usage.input_tokens == 270 and run.usage.cached_input_tokens == 100
    assert run.usage.output_tokens == 11
    assert run.harness == "opencode" and run.stop_reason == "end_turn"
    assert run.passed is True
    first = model_requests(fake)[0]
    system = first["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(ws.load("red").instructions.strip())
    assert [t["function"]["name"] for t in first["tools"]] == ["machine_red_mentioned"]
    assert first["messages"][1] == {"role": "user", "content": "my favourite colour is red"}
    stored = ws.store.get(run.id)
    assert stored is not None and stored.trajectory == run.trajectory


@pytest.mark.server
async def test_a_file_edit_acts_in_the_runs_sandbox_and_failures_come_back_as_tool_errors(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.push(
        tool_call("machine_edit_file", {"path": "calc.py", "old": "a - b", "new": "a + b"}),
        tool_call("machine_read_file", {"path": "../outside.txt"}),
        tool_call("machine_run", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"}),
        text("Fixed add; it prints 5 now."),
    )
    ws = open_workspace(workspace_root, harness=harness, keep_sandboxes=True)
    files = {"calc.py": "def add(a, b):\n    return a - b\n"}
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("dev", "add() subtracts; fix it", files=files)
    assert run.status == "ok", run.error
    sandbox = ws.data_dir / "sandboxes" / run.id
    assert (sandbox / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    calls = run.tool_calls
    assert [c.name for c in calls] == ["edit_file", "read_file", "run"]
    results = run.tool_results
    assert not results[0].is_error
    assert results[1].is_error and "outside" in results[1].content
    assert not results[2].is_error and "5" in results[2].content
    assert run.output == "Fixed add; it prints 5 now."
    # opencode's own tools are off: the model was offered only the machine's.
    offered = {t["function"]["name"] for t in model_requests(fake)[0]["tools"]}
    assert offered == {f"machine_{t.name}" for t in ws.load("dev").tools}


@pytest.mark.server
async def test_project_config_and_instruction_files_in_the_folder_never_reach_the_model(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.push(text("ok"))
    files = {
        "AGENTS.md": "LEAKED-AGENTS-INSTRUCTIONS",
        "CLAUDE.md": "LEAKED-CLAUDE-INSTRUCTIONS",
        "opencode.json": json.dumps({"instructions": ["extra.md"], "agent": {"build": {"prompt": "LEAKED"}}}),
        "extra.md": "LEAKED-EXTRA-INSTRUCTIONS",
        ".opencode/agent/spy.md": "---\ndescription: spy\n---\nLEAKED-AGENT-FILE",
    }
    ws = open_workspace(workspace_root, harness=harness)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "nothing here", files=files)
    assert run.status == "ok", run.error
    sent = json.dumps(model_requests(fake))
    assert "LEAKED" not in sent


@pytest.mark.server
async def test_max_steps_stops_a_model_that_keeps_calling_tools(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.default = tool_call("machine_red_mentioned", {})
    fake.latency_ms = 300  # a model's own time: the abort lands while the third call is still out
    ws = open_workspace(workspace_root, harness=harness)
    spec = dataclasses.replace(ws.load("red"), max_steps=2)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run(spec, "red red red")
    assert run.status == "ok", run.error
    # opencode's own step limit only asks the model to stop; ours ends the run after two model calls.
    assert run.stop_reason == "max_steps"
    assert [m.role for m in run.trajectory] == ["user", "assistant", "tool", "assistant", "tool"]
    assert len(model_requests(fake)) <= 3


@pytest.mark.server
async def test_an_endpoint_error_fails_the_run_with_the_reason(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.default = status(400, "model m does not exist")
    ws = open_workspace(workspace_root, harness=harness)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "red")
    assert run.status == "error"
    assert "does not exist" in (run.error or "")


def red_model(request: Recorded) -> Item:
    """A model that follows red's rule: one call when the user's message holds the word, then a reply."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return text("Flagged.", prompt_tokens=40, completion_tokens=2)
    said = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if re.search(r"(?i)(?<![^\W_])red(?![^\W_])", said):
        return tool_call("machine_red_mentioned", {}, prompt_tokens=30, completion_tokens=3)
    return text("No red there.", prompt_tokens=30, completion_tokens=3)


@pytest.mark.server
def test_machine_suite_runs_concurrent_runs_through_one_opencode_server(workspace_root: Path) -> None:
    """The command line finds opencode by MACHINE_OPENCODE, runs every case of red two at a time through
    one server, each run with only its own tools, and stops the server when it ends."""
    binary = host_binary("opencode")
    temp = workspace_root.parent / "temp"
    temp.mkdir()
    with FakeOpenAI(responder=red_model) as fake:
        scrubbed = ("MACHINE_", "TINKER_", "OPENROUTER_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(scrubbed)}
        env["MACHINE_OPENCODE"] = str(binary)
        env["TMPDIR"] = str(temp)  # the server's private home is made here: nothing may be left in it
        argv = [str(Path(sys.executable).parent / "machine"), "--workspace", str(workspace_root)]
        argv += ["suite", "red", "--harness", "opencode", "--base-url", fake.url + "/v1"]
        argv += ["--concurrency", "2", "--json"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)["summary"]
    cases = json.loads((workspace_root / "machines" / "red" / "cases.json").read_text())
    assert summary["runs"] == len(cases) and summary["errors"] == 0
    assert summary["pass_rate"] == 1.0
    assert summary["cost_usd"] > 0  # the endpoint's usage, charged at red's model's listed price
    assert not opencode_processes(temp) and not list(temp.iterdir())


@pytest.mark.server
async def test_the_runs_token_stays_out_of_runs_events_and_opencodes_files_and_close_cleans_up(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "T0KEN-" + "x" * 40
    monkeypatch.setattr("machine.clients.tool_server.new_token", lambda: token)
    fake.push(tool_call("machine_red_mentioned", {}), text("Flagged."))
    ws = open_workspace(workspace_root, harness=harness)
    events: list[Any] = []
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "red", on_event=events.append)
    assert run.status == "ok", run.error
    assert [e.type for e in events] == ["assistant", "tool_call", "tool_result", "assistant"]
    assert token not in run.model_dump_json() and token not in repr(events)
    server = harness._server
    assert server is not None and server.process.poll() is None
    written = [p for p in server.home.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert written == []
    assert token not in json.dumps(model_requests(fake))
    await harness.aclose()
    assert server.process.poll() is not None and not server.home.exists()


def _request(**kw: Any) -> Any:
    from machine.budget import Budget
    from machine.runs import HarnessRequest, ToolContext

    fields: dict[str, Any] = {
        "run_id": "r1",
        "machine": "m",
        "instructions": "Be brief.",
        "input": "hi",
        "model": "m",
        "tools": [],
        "tool_context": ToolContext(run_id="r1"),
        "budget": Budget(None),
    }
    return HarnessRequest(**{**fields, **kw})


def test_an_endpoint_error_and_a_failed_tool_read_back_from_the_session() -> None:
    from machine.clients.hosts.opencode import to_result

    messages = [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "hi"}]},
        {
            "info": {
                "role": "assistant",
                "tokens": {"input": 5, "output": 2, "reasoning": 1, "cache": {"read": 3}},
            },
            "parts": [
                {"type": "reasoning", "text": "look first"},
                {
                    "type": "tool",
                    "callID": "c1",
                    "tool": "machine_read_file",
                    "state": {"status": "error", "input": {"path": "x"}, "error": "no such file: x"},
                },
            ],
        },
        {
            "info": {
                "role": "assistant",
                "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                "error": {
                    "name": "APIError",
                    "data": {"message": "Internal Server Error", "statusCode": 500},
                },
            },
            "parts": [],
        },
    ]
    result = to_result(_request(), messages)
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool"]
    assert result.trajectory[1].reasoning == "look first"
    assert result.trajectory[1].tool_calls[0].name == "read_file"
    assert result.trajectory[2].is_error and result.trajectory[2].content == "no such file: x"
    assert result.error == "APIError: Internal Server Error" and result.stop_reason == "error"
    assert (result.usage.input_tokens, result.usage.cached_input_tokens, result.usage.output_tokens) == (
        8,
        3,
        3,
    )


def test_earlier_turns_go_to_opencode_as_a_transcript() -> None:
    from machine.clients.hosts.opencode._mapping import _prompt  # the transcript opencode is sent, on purpose
    from machine.runs import Message

    history = [Message(role="user", content="I am Ada."), Message(role="assistant", content="Hello Ada.")]
    prompt = _prompt(_request(input="What is my name?", history=history))
    assert (
        prompt.index("user: I am Ada.")
        < prompt.index("assistant: Hello Ada.")
        < prompt.index("What is my name?")
    )
    assert _prompt(_request(input="plain")) == "plain"


@pytest.mark.server
async def test_a_tinker_id_goes_to_tinker_with_its_key_from_the_environment_and_the_effort(
    workspace_root: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --base-url: red's Tinker model goes to Tinker's OpenAI-compatible path (here the fake, through
    TINKER_BASE_URL) with TINKER_API_KEY, which opencode reads from its environment, never from a file."""
    key = "tk-" + "k" * 40
    monkeypatch.setenv("TINKER_API_KEY", key)
    monkeypatch.setenv("TINKER_BASE_URL", fake.url)
    fake.push(text("no red here"))
    harness = OpencodeHarness(binary=host_binary("opencode"))
    ws = open_workspace(workspace_root, harness=harness, effort="high")
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            run = await ws.run("red", "a blue sky")
        assert run.status == "ok", run.error
        [sent] = fake.requests
        assert sent.path == "/oai/api/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {key}"
        assert sent.body["model"] == ws.load("red").model == run.model
        assert sent.body.get("reasoning_effort") == "high"
        server = harness._server
        assert server is not None
        assert not [p for p in server.home.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    finally:
        await harness.aclose()


@pytest.mark.server
async def test_each_step_reaches_on_event_as_soon_as_it_finishes(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    """The model's second call waits until the first step's tool result has reached ``on_event``: it
    answers "live" only if the event came while the run was still going."""
    seen = threading.Event()

    def model(request: Recorded) -> Item:
        if request.body["messages"][-1]["role"] != "tool":
            return tool_call("machine_red_mentioned", {})
        return text("live" if seen.wait(10) else "late")

    fake.responder = model

    def on_event(event: Any) -> None:
        if event.type == "tool_result":
            seen.set()

    ws = open_workspace(workspace_root, harness=harness)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "red", on_event=on_event)
    assert run.status == "ok", run.error
    assert run.output == "live"


@pytest.mark.server
async def test_two_machines_at_once_each_with_its_own_agent_and_effort(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    """A second machine's agent is declared while the first machine's run is in flight: the declaration
    waits for it (changing opencode's configuration would abort it), and both runs finish. Each run's
    effort goes with its own request only."""
    fake.latency_ms = 1500
    fake.default = text("done")
    ws = open_workspace(workspace_root, harness=harness)
    red = ws.load("red")
    other = dataclasses.replace(red, instructions="You are the other machine.")
    runs: dict[str, Any] = {}

    async def one(label: str, spec: Any, effort: str | None) -> None:
        runs[label] = await ws.run(spec, f"input of {label}", effort=parse_effort(effort))

    with anyio.fail_after(RUN_LIMIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(one, "red-high", red, "high")
            while not fake.requests:  # the first run's model call is out
                await anyio.sleep(0.02)
            group.start_soon(one, "other-none", other, None)
            group.start_soon(one, "red-low", red, "low")
    assert {label: run.status for label, run in runs.items()} == dict.fromkeys(runs, "ok")
    sent = {r["messages"][-1]["content"]: r for r in model_requests(fake)}
    assert sent["input of red-high"]["messages"][0]["content"].startswith(red.instructions.strip())
    assert sent["input of other-none"]["messages"][0]["content"].startswith("You are the other machine.")
    efforts = {label: sent[f"input of {label}"].get("reasoning_effort") for label in runs}
    assert efforts == {"red-high": "high", "other-none": None, "red-low": "low"}


@pytest.mark.server
async def test_a_model_call_that_keeps_failing_fails_the_run_after_the_retries(
    workspace_root: Path, fake: FakeOpenAI
) -> None:
    fake.default = status(500, "the model is down")
    harness = OpencodeHarness(binary=host_binary("opencode"), base_url=fake.url + "/v1", max_retries=1)
    ws = open_workspace(workspace_root, harness=harness)
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            run = await ws.run("red", "red")
    finally:
        await harness.aclose()
    assert run.status == "error"
    assert "failed after 2 attempts" in (run.error or "") and "the model is down" in (run.error or "")
    assert [r["attempt"] for r in run.retries] == [1, 2]


@pytest.mark.server
async def test_the_time_limit_ends_the_run_with_the_reason(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "1")
    fake.default = hang(4)
    ws = open_workspace(workspace_root, harness=harness)
    spec = dataclasses.replace(ws.load("red"), max_steps=1)
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run(spec, "red")
    assert run.status == "error"
    assert "did not finish the run within 2 s" in (run.error or "")


@pytest.mark.server
async def test_a_cancelled_run_aborts_its_session(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    """Cancelled while opencode retries a failing model call: the session is aborted, so no further
    model call goes out, and the server is left ready for the next run."""
    fake.default = status(500, "down")
    ws = open_workspace(workspace_root, harness=harness)
    with anyio.fail_after(RUN_LIMIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(ws.run, "red", "red")
            while not fake.requests:
                await anyio.sleep(0.05)
            group.cancel_scope.cancel()
    settled = len(fake.requests)
    await anyio.sleep(3)  # opencode's first retry would go out after 2 s
    assert len(fake.requests) == settled
    fake.default = text("back")
    with anyio.fail_after(RUN_LIMIT_S):
        run = await ws.run("red", "no colour here")
    assert run.status == "ok" and run.output == "back"


@pytest.mark.server
async def test_a_model_opencode_does_not_know_is_refused_clearly(
    workspace_root: Path, fake: FakeOpenAI
) -> None:
    harness = OpencodeHarness(binary=host_binary("opencode"))
    ws = open_workspace(workspace_root, harness=harness)
    try:
        with anyio.fail_after(RUN_LIMIT_S):
            run = await ws.run("red", "red", model="nosuch/model-1")
    finally:
        await harness.aclose()
    assert run.status == "error"
    assert "opencode has no provider 'nosuch'" in (run.error or "")
    assert not fake.requests


@pytest.mark.server
async def test_opencode_dying_mid_run_fails_that_run_and_the_next_one_starts_it_afresh(
    workspace_root: Path, fake: FakeOpenAI, harness: OpencodeHarness
) -> None:
    fake.latency_ms = 1500
    fake.default = text("done")
    ws = open_workspace(workspace_root, harness=harness)
    failed: list[Any] = []

    async def doomed() -> None:
        failed.append(await ws.run("red", "red"))

    with anyio.fail_after(RUN_LIMIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(doomed)
            while not fake.requests:
                await anyio.sleep(0.02)
            first = harness._server
            assert first is not None
            os.killpg(first.process.pid, signal.SIGKILL)
        [run] = failed
        assert run.status == "error" and "opencode stopped answering" in (run.error or "")
        fake.latency_ms = 0
        again = await ws.run("red", "no colour")
    assert again.status == "ok" and again.output == "done"
    assert harness._server is not None and harness._server is not first
    assert not first.home.exists()
