"""Runs out as OpenTelemetry traces, received by a real OTLP backend on loopback: Phoenix, installed from
PyPI in a virtual environment of its own (``.venv/phoenix``: its pins would move the project's), started
once for the module. A suite made by the real ``machine`` command sends one trace a run, the run's span
with its model calls and tool calls as children and the GenAI conventions' attributes and the scorecard
on it; content only with capture on, its secrets redacted; an endpoint nobody listens on fails no run."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import socket
import struct
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_workspace import Command, WorkspaceFolder, write_workspace
from helpers.env import MACHINE_BIN, clean_env, on_ci

from machine.workspace import _tracing

PHOENIX = Path(__file__).resolve().parents[2] / ".venv" / "phoenix" / "bin" / "phoenix"
START_S = 180
WAIT_S = 60
SECRET = "zq8Kd93hXw0pLm2vB7tR"


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceFolder:
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def machine_cmd(tmp_path: Path) -> Command:
    """The installed ``machine`` command in a subprocess, its output captured (so a command that left
    the exporter holding its output would be waited for: it never does)."""

    def call(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MACHINE_BIN), *map(str, args)],
            input="",
            capture_output=True,
            text=True,
            env=clean_env(env),
            cwd=tmp_path,
            timeout=120,
            check=False,
        )

    return call


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Phoenix serving OTLP/HTTP and its REST API on a free loopback port; its base URL."""
    if not PHOENIX.exists():
        if on_ci():
            pytest.fail(f"no {PHOENIX}: make test installs arize-phoenix there")
        pytest.skip(
            f"no {PHOENIX} (python -m venv .venv/phoenix && .venv/phoenix/bin/pip install arize-phoenix)"
        )
    port, grpc = _free_port(), _free_port()
    home = tmp_path_factory.mktemp("phoenix")
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (home / "log").open("wb")
    server = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"phoenix did not start: {(home / 'log').read_text()[-2000:]}")
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=20)
        log.close()


def _spans(base: str, project: str, expected: int) -> list[dict[str, Any]]:
    """The project's spans once ``expected`` have arrived (``WAIT_S`` at most)."""
    deadline = time.monotonic() + WAIT_S
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            spans = _get(f"{base}/v1/projects/{project}/spans?limit=1000")["data"]
        except OSError:  # the project appears with its first span
            spans = []
        if len(spans) >= expected:
            return spans
        time.sleep(0.5)
    pytest.fail(f"{len(spans)} of {expected} spans arrived in {WAIT_S} s")


def _suite(machine_cmd: Command, ws: WorkspaceFolder, env: dict[str, str], *more: str) -> None:
    done = machine_cmd(
        "suite",
        "greet",
        "--harness",
        "scripted",
        "--script",
        ws.script,
        "--workspace",
        ws.root,
        *more,
        env=env,
    )
    assert done.returncode == 0, done.stderr


def _traced(base: str, project: str, **more: str) -> dict[str, str]:
    return {
        "MACHINE_OTEL_ENDPOINT": base,
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        **more,
    }


def test_a_suite_is_one_trace_a_run_with_its_calls_and_scorecard(
    phoenix: str, machine_cmd: Command, ws: WorkspaceFolder
) -> None:
    _suite(machine_cmd, ws, _traced(phoenix, "suite"))
    runs = {run.case_id: run for run in ws.runs("greet")}
    spans = _spans(phoenix, "suite", 3 + 4)  # ann: two model calls and a tool call; bob, cat: one call
    roots = [s for s in spans if s["parent_id"] is None]
    assert sorted(s["name"] for s in roots) == ["invoke_agent greet"] * 3
    for case, run in runs.items():
        root = next(s for s in roots if s["attributes"]["machine.run.id"] == run.id)
        assert root["context"]["trace_id"] == hashlib.sha256(run.id.encode()).hexdigest()[:32]
        a = root["attributes"]
        assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "greet"
        assert a["gen_ai.provider.name"] == "scripted" and a["gen_ai.request.model"] == run.model
        assert a["machine.case.id"] == case and a["machine.score"] == pytest.approx(run.score)
        assert a["machine.unscored"] == ["warm"] and "machine.criterion.warm.score" not in a
        assert a["machine.criterion.greets.score"] == run.scorecard.criteria["greets"].score
        children = sorted(
            (s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"] and s is not root),
            key=lambda s: s["start_time"],
        )
        assert all(s["parent_id"] == root["context"]["span_id"] for s in children)
        names = [s["name"] for s in children]
        chat = f"chat {run.model}"
        assert names == ([chat, "execute_tool shout", chat] if case == "ann" else [chat])
        call = children[0]["attributes"]
        assert call["gen_ai.operation.name"] == "chat" and call["gen_ai.response.model"] == run.model
        assert "gen_ai.usage.input_tokens" in call and "gen_ai.usage.output_tokens" in call
        if case == "ann":
            tool = children[1]["attributes"]
            assert tool["gen_ai.tool.name"] == "shout" and tool["gen_ai.tool.call.id"]
    every = json.dumps(spans)
    assert "gen_ai.input.messages" not in every and "hello ann" not in every  # no content unless asked


def test_content_only_when_asked_and_its_secrets_redacted(
    phoenix: str, machine_cmd: Command, ws: WorkspaceFolder
) -> None:
    ws.write(".env", f"GREET_TOKEN={SECRET}\n")
    ws.write_json("machines/greet/secret.json", [{"id": "ann", "input": f"greet ann {SECRET}"}])
    env = _traced(phoenix, "content", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    _suite(machine_cmd, ws, env, "--cases", "secret.json")
    spans = _spans(phoenix, "content", 4)
    every = json.dumps(spans)
    assert SECRET not in every and "[REDACTED" in every
    tool = next(s for s in spans if s["name"] == "execute_tool shout")["attributes"]
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"text": "hello ann"}
    assert tool["gen_ai.tool.call.result"] == "HELLO ANN"
    last = max((s for s in spans if s["name"].startswith("chat ")), key=lambda s: s["start_time"])
    said = json.loads(last["attributes"]["gen_ai.output.messages"])
    assert said == [{"role": "assistant", "parts": [{"type": "text", "content": "hello ann"}]}]
    asked = json.loads(last["attributes"]["gen_ai.input.messages"])
    assert [m["role"] for m in asked] == ["user", "assistant", "tool"]


def test_an_endpoint_nobody_listens_on_fails_no_run(machine_cmd: Command, ws: WorkspaceFolder) -> None:
    """The command ends (a hang past ``machine_cmd``'s bound fails the test) and every run is made; how
    much tracing costs a run is benchmarks/otel.py's to measure, not a test's."""
    _suite(machine_cmd, ws, {"MACHINE_OTEL_ENDPOINT": f"http://127.0.0.1:{_free_port()}"})
    assert sorted(run.status for run in ws.runs("greet")) == ["ok"] * 3


def test_a_missing_sdk_is_said_once_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MACHINE_OTEL_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(_tracing, "_sdk_installed", lambda: False)
    monkeypatch.setattr(_tracing, "_tracer", None)
    monkeypatch.setattr(_tracing, "_said", set())
    assert _tracing.tracer() is None and _tracing.tracer() is None
    said = capsys.readouterr().err
    assert said.count("pip install 'machine[otel]'") == 1


def test_off_unless_an_endpoint_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*_tracing.ENDPOINT_VARIABLES, "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    assert _tracing.settings() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert _tracing.settings() == ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", False)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert _tracing.settings() is None


def test_the_exporter_takes_what_it_is_sent_at_once_and_holds_at_most_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parent writing faster than spans are made is never kept waiting on the pipe: the exporter reads
    it as it comes (here nothing is taken out until all was written, far more than a pipe holds), keeping
    at most ``MAX_INBOX_BYTES`` and dropping newer batches past that, never a flush."""
    from machine.workspace import _trace_export as exporter

    batch = pickle.dumps([{"name": "x" * 1024 * 1024}], protocol=pickle.HIGHEST_PROTOCOL)
    monkeypatch.setattr(exporter, "MAX_INBOX_BYTES", 3 * len(batch) + 100)
    read, write = os.pipe()
    inbox = exporter.Inbox(os.fdopen(read, "rb"))

    def send() -> None:
        with os.fdopen(write, "wb") as pipe:
            for data in [batch] * 6 + [exporter.FLUSH]:
                pipe.write(struct.pack(">I", len(data)) + data)

    sender = threading.Thread(target=send)
    sender.start()
    sender.join(timeout=60)
    assert not sender.is_alive(), "the parent was kept waiting on a full pipe"
    deadline = time.monotonic() + 60  # until the inbox has read to the end, before anything is taken
    while not (inbox.frames and inbox.frames[-1] is None) and time.monotonic() < deadline:
        time.sleep(0.01)
    values = list(inbox)
    assert values[-1] == "flush" and len(values) == 4
