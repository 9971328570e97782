"""The pi harness with the real pi binary (``make hosts`` pins it) against a local server that speaks the
OpenAI protocol: the run's tools reach pi through the generated extension and the per-run MCP server and
act in the run's sandbox. Only loopback traffic; every run is bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.hosts import host_binary, processes_with
from helpers.openai_server import FakeOpenAI, hang, status, text, tool_call

import machine.clients.tool_server as run_tools
from machine import (
    Budget,
    Event,
    HarnessRequest,
    Message,
    ToolCall,
    ToolContext,
    ToolFailure,
    Usage,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    tool,
)
from machine.budget import price_of
from machine.clients.hosts.pi import INSTALL, PiHarness
from machine.errors import HarnessError
from machine.runs import parse_effort
from machine.sandboxes.tools import edit_file, read_file, write_file
from machine.workspace import Workspace

pytestmark = [pytest.mark.slow, pytest.mark.server]  # pi, from npm

REPO = Path(__file__).resolve().parents[3]
LIMIT_S = 30.0
SCRUBBED = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "TINKER_API_KEY", "MACHINE_PI")
RUBRIC = define_rubric({"ran": {"description": "The run finished.", "weight": 1}})
EVALUATOR = define_evaluator(RUBRIC, {"ran": check("ran", lambda run: (True, "ran"))})


@tool
def shout(text: str) -> str:
    """Say text in capitals."""
    if text == "bad":
        raise ToolFailure("bad is not shoutable")
    return text.upper()


def shouter(max_steps: int = 4, tools: list[Any] | None = None) -> Any:
    return define_machine(
        name="shouter",
        intent="Shout what it is given.",
        instructions="Shout things with the shout tool.",
        model="fake-model",
        rubric=RUBRIC,
        evaluator=EVALUATOR,
        tools=tools if tools is not None else [shout],
        max_steps=max_steps,
    )


@pytest.fixture(autouse=True)
def private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No keys from the person's environment, and pi's private folders made where the test can look for
    what is left behind."""
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "20")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.fixture
def pi(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pinned pi binary, found as the harness finds it: through MACHINE_PI."""
    binary = host_binary("pi")
    monkeypatch.setenv("MACHINE_PI", str(binary))
    return binary


@pytest.fixture
def fake(pi: Path) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def harness(fake: FakeOpenAI, **kw: Any) -> PiHarness:
    kw.setdefault("max_retries", 0)
    return PiHarness(base_url=fake.url + "/v1", **kw)


def request(model: str = "fake-model", **kw: Any) -> HarnessRequest:
    kw.setdefault("input", "shout hello")
    kw.setdefault("tools", [shout])
    return HarnessRequest(
        run_id="r1",
        machine="shouter",
        instructions="Shout things with the shout tool.",
        model=model,
        tool_context=ToolContext(run_id="r1"),
        budget=Budget(None),
        **kw,
    )


def red_workspace(tmp_path: Path, runner: PiHarness, **kw: Any) -> Workspace:
    shutil.copytree(REPO / "machines" / "red", tmp_path / "ws" / "machines" / "red")
    return open_workspace(tmp_path / "ws", harness=runner, **kw)


def pi_processes(temp: Path) -> list[str]:
    """Processes whose agent directory is one of the private folders under ``temp`` (pi renames itself
    ``pi``, overwriting its command line, so its environment tells)."""
    return processes_with(f"PI_CODING_AGENT_DIR={temp}/")


async def test_red_runs_through_pi_with_exactly_its_instructions_and_tools(
    fake: FakeOpenAI, tmp_path: Path, private: Path
) -> None:
    fake.push(
        tool_call("red_mentioned", {}, prompt_tokens=1000, cached_tokens=400, completion_tokens=20),
        text("Noted: you said red.", prompt_tokens=1100, completion_tokens=10),
    )
    ws = red_workspace(tmp_path, harness(fake), budget=Budget(1.0))
    spec, events = ws.load("red"), list[Event]()
    with anyio.fail_after(LIMIT_S):
        run = await ws.run("red", "I like red apples", grade=True, on_event=events.append)

    assert (run.status, run.error, run.stop_reason, run.harness) == ("ok", None, "end_turn", "pi")
    stored = ws.store.get(run.id)
    assert [m.role for m in stored.trajectory] == ["user", "assistant", "tool", "assistant"]
    assert stored.trajectory[0].content == "I like red apples"
    [call] = stored.tool_calls
    assert (call.name, call.arguments) == ("red_mentioned", {})
    [result] = stored.tool_results
    assert (result.content, result.is_error) == ("noted: red was mentioned", False)
    assert (result.tool_call_id, result.name) == (call.id, "red_mentioned")
    assert stored.output == "Noted: you said red."
    assert stored.usage == Usage(input_tokens=2100, cached_input_tokens=400, output_tokens=30)
    price = price_of(spec.model)
    assert price is not None
    expected = price.cost(Usage(input_tokens=1000, cached_input_tokens=400, output_tokens=20))
    expected += price.cost(Usage(input_tokens=1100, output_tokens=10))
    assert stored.cost_usd == pytest.approx(expected) and stored.cost_usd > 0
    assert run.score == 1.0  # red's own rule: one call for a message that says red

    first = fake.requests[0].body
    assert first["model"] == spec.model
    assert first["messages"][0] == {"role": "system", "content": spec.instructions}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [t["function"] for t in first["tools"]] == [t.function() for t in spec.tools]
    assert not {"max_completion_tokens", "store", "reasoning_effort"} & set(first)
    assert [e.type for e in events if e.type != "text"] == [
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert "".join(e.message.content for e in events if e.type == "text") == "Noted: you said red."
    assert not list(private.iterdir()) and not pi_processes(private)


async def test_file_tools_change_the_runs_sandbox(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.push(
        tool_call("edit_file", {"path": "notes.txt", "old": "blue", "new": "red"}),
        tool_call("write_file", {"path": "out/hello.txt", "content": "hi\n"}),
        tool_call("read_file", {"path": "notes.txt"}),
        text("Changed notes.txt and wrote out/hello.txt."),
    )
    editor = shouter(max_steps=6, tools=[read_file, write_file, edit_file])
    ws = open_workspace(tmp_path / "ws", harness=harness(fake), keep_sandboxes=True)
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(editor, "make the colour red", files={"notes.txt": "colour: blue\n"})

    assert (run.status, run.stop_reason) == ("ok", "end_turn"), run.error
    sandbox = ws.data_dir / "sandboxes" / run.id
    assert (sandbox / "notes.txt").read_text() == "colour: red\n"
    assert (sandbox / "out" / "hello.txt").read_text() == "hi\n"
    assert [c.name for c in run.tool_calls] == ["edit_file", "write_file", "read_file"]
    assert not any(m.is_error for m in run.tool_results)
    assert "colour: red" in run.tool_results[2].content
    assert not (sandbox / ".pi").exists()  # pi kept nothing of its own in the sandbox


async def test_a_tool_failure_reaches_the_model_as_an_error_result(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.push(tool_call("shout", {"text": "bad"}), text("It could not be shouted.", reasoning="It refused."))
    ws = open_workspace(tmp_path / "ws", harness=harness(fake))
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(shouter(), "shout bad")

    assert (run.status, run.stop_reason) == ("ok", "end_turn")
    [result] = run.tool_results
    assert (result.content, result.is_error) == ("bad is not shoutable", True)
    assert (run.output, run.trajectory[-1].reasoning) == ("It could not be shouted.", "It refused.")
    assert fake.requests[1].messages[-1] == {
        "role": "tool",
        "content": "bad is not shoutable",
        "tool_call_id": run.tool_calls[0].id,
    }


@pytest.mark.parametrize(
    ("fault", "calls", "said"),
    [(status(500, "overloaded"), 2, "500 overloaded"), (status(401, "bad key"), 1, "401 bad key")],
)
async def test_an_endpoint_failure_fails_the_run_with_the_reason(
    fake: FakeOpenAI, tmp_path: Path, fault: Any, calls: int, said: str
) -> None:
    fake.default = fault
    ws = open_workspace(tmp_path / "ws", harness=harness(fake, max_retries=1, retry_delay_s=0.01))
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(shouter(), "shout hello")

    assert (run.status, run.stop_reason) == ("error", "error")
    assert said in (run.error or "") and "fake-model" in (run.error or "")
    assert [m.role for m in run.trajectory] == ["user"]
    assert len(fake.requests) == calls
    assert len(run.retries) == calls - 1


async def test_max_steps_stops_pi_before_another_model_call(
    fake: FakeOpenAI, tmp_path: Path, private: Path
) -> None:
    fake.push(
        tool_call("shout", {"text": "one"}),
        tool_call("shout", {"text": "two"}),
        tool_call("shout", {"text": "three"}),
        text("never asked for"),
    )
    ws = open_workspace(tmp_path / "ws", harness=harness(fake))
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(shouter(max_steps=2), "shout twice")

    assert (run.status, run.stop_reason, run.error) == ("ok", "max_steps", None)
    assert [m.role for m in run.trajectory] == ["user", "assistant", "tool", "assistant", "tool"]
    assert [m.content for m in run.tool_results] == ["ONE", "TWO"]
    assert len(fake.requests) == 2 and fake.pending == 2
    assert not list(private.iterdir()) and not pi_processes(private)


@pytest.mark.parametrize("tinker", [False, True])
async def test_history_is_replayed_to_the_model_as_earlier_turns(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tinker: bool
) -> None:
    history = [
        Message(role="user", content="shout x"),
        Message(role="assistant", tool_calls=[ToolCall(id="c9", name="shout", arguments={"text": "x"})]),
        Message(role="tool", content="X", tool_call_id="c9", name="shout"),
        Message(role="assistant", content="Shouted.", reasoning="private thoughts"),
    ]
    fake.push(text("Again."))
    runner, model = harness(fake), "fake-model"
    if tinker:  # a Tinker model: declared with its key by name, and its reasoning goes back to it
        monkeypatch.setenv("TINKER_API_KEY", "tk-test")
        monkeypatch.setenv("TINKER_BASE_URL", fake.url)
        runner, model = PiHarness(max_retries=0), "Qwen/Qwen3.8-27B"
    with anyio.fail_after(LIMIT_S):
        result = await runner.run(request(model, history=history, input="once more"))

    assert (result.stop_reason, result.output) == ("end_turn", "Again.")
    assert [m.role for m in result.trajectory] == ["user", "assistant"]  # only this run's messages
    sent = fake.requests[0].messages
    assert sent[1:] == [
        {"role": "user", "content": [{"type": "text", "text": "shout x"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "shout", "arguments": '{"text":"x"}'}}
            ],
        },
        {"role": "tool", "content": "X", "tool_call_id": "c9"},
        {
            "role": "assistant",
            "content": "Shouted.",
            **({"reasoning_content": "private thoughts"} if tinker else {}),
        },
        {"role": "user", "content": [{"type": "text", "text": "once more"}]},
    ]
    if tinker:
        seen = fake.requests[0]
        assert (seen.path, seen.headers["authorization"]) == (
            "/oai/api/v1/chat/completions",
            "Bearer tk-test",
        )


@pytest.mark.parametrize(("effort", "sent"), [("high", "high"), ("none", "none")])  # no effort: see red's
async def test_effort_is_pis_thinking_level(fake: FakeOpenAI, effort: str | None, sent: str | None) -> None:
    fake.push(text("ok"))
    with anyio.fail_after(LIMIT_S):
        result = await harness(fake).run(request(effort=parse_effort(effort), tools=[]))
    assert result.stop_reason == "end_turn", result.error
    body = fake.requests[0].body
    assert body.get("reasoning_effort") == sent
    assert body["messages"][0]["role"] == "system" and "tools" not in body


@pytest.mark.parametrize("model", ["machine-test/not-in-pis-catalogue", "openai/gpt-4o-mini"])
async def test_openrouter_models_use_pis_provider_with_its_attribution(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    monkeypatch.setenv("OPENROUTER_BASE_URL", fake.url + "/api/v1")
    fake.push(text("ok", prompt_tokens=5, completion_tokens=1))
    with anyio.fail_after(LIMIT_S):
        result = await PiHarness(max_retries=0).run(request(f"openrouter/{model}"))
    assert (result.stop_reason, result.output, result.error) == ("end_turn", "ok", None)
    seen = fake.requests[0]
    assert (seen.path, seen.body["model"]) == ("/api/v1/chat/completions", model)
    assert seen.headers["http-referer"] == "https://pi.dev"
    assert seen.headers["authorization"] == "Bearer sk-or-test"


async def test_the_token_is_never_written_sent_or_stored(
    fake: FakeOpenAI, tmp_path: Path, private: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens: list[str] = []
    real = run_tools.serve_run_tools

    @contextlib.asynccontextmanager
    async def recording(*args: Any, **kw: Any) -> AsyncIterator[Any]:
        async with real(*args, **kw) as served:
            tokens.append(served.token)
            yield served

    monkeypatch.setattr(run_tools, "serve_run_tools", recording)

    @tool
    def look() -> str:
        """Report pi's private folders while pi runs."""
        folders = list(private.iterdir())
        files = [p for folder in folders for p in folder.rglob("*") if p.is_file()]
        holding = [p.name for p in files if tokens[0].encode() in p.read_bytes()]
        modes = sorted({oct(stat.S_IMODE(f.stat().st_mode)) for f in folders})
        return json.dumps({"files": len(files), "holding": holding, "modes": modes})

    fake.push(tool_call("look", {}), text("looked"))
    events: list[Event] = []
    ws = open_workspace(tmp_path / "ws", harness=harness(fake))
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(shouter(tools=[look]), "look around", on_event=events.append)

    assert run.status == "ok", run.error
    [token] = tokens
    seen = json.loads(run.tool_results[0].content)
    assert seen["files"] >= 4 and seen["holding"] == [] and seen["modes"] == ["0o700"]
    assert token not in ws.store.get(run.id).model_dump_json()
    assert all(token not in e.message.model_dump_json() for e in events)
    assert all(token.encode() not in r.raw and token not in json.dumps(r.headers) for r in fake.requests)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert not list(private.iterdir())


async def test_a_model_pi_cannot_serve_fails_the_run_with_pis_reason(pi: Path) -> None:
    with anyio.fail_after(LIMIT_S):
        result = await PiHarness().run(request("no-such-provider/some-model"))
    assert (result.stop_reason, [m.role for m in result.trajectory]) == ("error", ["user"])
    assert "pi exited with status 1" in (result.error or "")
    assert 'Unknown provider "no-such-provider"' in (result.error or "")


async def test_a_model_that_does_not_answer_in_time_fails_the_run(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "1")
    fake.push(hang(4))
    with anyio.fail_after(LIMIT_S):
        result = await harness(fake).run(request())
    assert (result.stop_reason, result.trajectory[-1].role) == ("error", "user")
    assert "Request timed out" in (result.error or "") and "MACHINE_MODEL_TIMEOUT=1 s" in (result.error or "")


async def test_a_run_past_its_time_limit_is_stopped(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, private: Path
) -> None:
    @tool
    async def slow() -> str:
        """Take longer than the run may."""
        await anyio.sleep(3)
        return "finished"

    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "1")  # one step: the whole run may take 2 s
    fake.push(tool_call("slow", {}), text("never asked for"))
    with anyio.fail_after(LIMIT_S):
        result = await harness(fake).run(request(tools=[slow], max_steps=1))
    assert result.stop_reason == "error"
    assert "pi did not finish the run within 2 s" in (result.error or "")
    assert not pi_processes(private) and not list(private.iterdir())


async def test_a_cancelled_run_leaves_no_pi_and_no_folder(fake: FakeOpenAI, private: Path) -> None:
    fake.push(hang(4))
    running: list[str] = []
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(harness(fake).run, request())
            while not fake.requests:  # pi is waiting for the model
                await anyio.sleep(0.02)
            running = pi_processes(private)
            group.cancel_scope.cancel()
    assert running
    assert not pi_processes(private) and not list(private.iterdir())


async def test_a_missing_pi_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MACHINE_PI", str(tmp_path / "no-pi-here"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError) as raised:  # when the harness is made: a command fails before any run
        PiHarness(base_url="http://127.0.0.1:9/v1")
    assert "`pi` program" in str(raised.value) and INSTALL in str(raised.value)
    assert "MACHINE_PI" in str(raised.value)


def test_the_judges_share_the_endpoint_only_when_one_was_given(
    monkeypatch: pytest.MonkeyPatch, pi: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    endpoint = PiHarness(base_url="http://127.0.0.1:9/v1/").endpoint
    assert endpoint is not None
    assert (endpoint.harness, endpoint.base_url, endpoint.api_key) == (
        "openai",
        "http://127.0.0.1:9/v1",
        "sk-local",
    )
    assert PiHarness().endpoint is None
    assert PiHarness.name == "pi"


async def test_settings_and_instruction_files_in_the_runs_folder_never_reach_pi(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    # The harness retries nothing here (max_retries=0): a project .pi/settings.json that pi merged would
    # turn retries on, and the first reply's 500 would be retried into a finished run.
    fake.push(status(500, "first call fails"), text("ok"))
    retries = {"retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 1}}
    files = {
        "AGENTS.md": "LEAKED-AGENTS",
        "CLAUDE.md": "LEAKED-CLAUDE",
        ".pi/SYSTEM.md": "LEAKED-SYSTEM",
        ".pi/APPEND_SYSTEM.md": "LEAKED-APPEND",
        ".pi/settings.json": json.dumps(retries),
    }
    ws = open_workspace(tmp_path / "ws", harness=harness(fake))
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(shouter(), "hello", files=files)
    assert run.status == "error" and "first call fails" in (run.error or "")
    assert len(fake.requests) == 1
    sent = json.dumps(fake.requests[0].body)
    assert "LEAKED" not in sent
    assert fake.requests[0].body["messages"][0]["content"] == "Shout things with the shout tool."
