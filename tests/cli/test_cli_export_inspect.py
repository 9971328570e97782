"""``machine export --format inspect``: a suite's runs (passing, failing, failed, one criterion UNSCORED,
one with tool calls) written as an Inspect eval log that the real ``inspect_ai`` reads back, and that
``inspect view``'s own server lists and serves on loopback; the training filters refused in words."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from helpers.env import clean_env, installed_or_skip
from helpers.processes import end

from machine.budget import Usage
from machine.runs import (
    CriterionScore,
    Message,
    Run,
    Scorecard,
    SQLiteStore,
    SuiteRecord,
    Timings,
    ToolCall,
)

installed_or_skip("inspect_ai", reason="inspect_ai is not installed (the dev extra)")
import inspect_ai.log as inspect_log  # noqa: E402

Invoke = Callable[..., Result]
T0 = datetime(2026, 11, 1, tzinfo=UTC)
SUITE = "20261101-000000-suite0001"
MACHINE_PY = """\
from machine import check, define_evaluator, define_machine
from .rubric import rubric

machine = define_machine(
    name="shout",
    intent="Shout the input back.",
    instructions="Repeat the input in capital letters.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(
        rubric, {"loud": check("loud", lambda r: True), "short": check("short", lambda r: True)}
    ),
)
"""
RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"loud": "The reply is in capitals.", "short": "The reply is short."})
"""


def card(loud: float | None, short: float | None) -> Scorecard:
    def grade(name: str, score: float | None) -> CriterionScore:
        reason = "the judge gave no verdict" if score is None else f"{name} {score}"
        return CriterionScore(criterion=name, weight=1.0, grader=f"check:{name}", score=score, reason=reason)

    return Scorecard(
        criteria={"loud": grade("loud", loud), "short": grade("short", short)}, rubric_fingerprint="f"
    )


def run(i: int, case: str, trial: int, **fields: object) -> Run:
    start = T0 + timedelta(minutes=i)
    fields.setdefault("trajectory", [Message(role="user", content=f"say {case}")])
    fields.setdefault("output", case.upper())
    return Run(
        id=f"20261101-0000{i:02d}-run{i:04d}",
        machine="shout",
        version="v2",
        model="echo",
        harness="scripted",
        instructions="Repeat the input in capital letters.",
        input=f"say {case}",
        usage=Usage(input_tokens=100 + i, cached_input_tokens=10, output_tokens=20),
        cost_usd=0.001 * (i + 1),
        timings=Timings(started_at=start, finished_at=start + timedelta(seconds=2)),
        case_id=case,
        trial=trial,
        suite_id=SUITE,
        **fields,
    )


def seeded(root: Path) -> list[Run]:
    folder = root / "machines" / "shout"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY)
    (folder / "rubric.py").write_text(RUBRIC_PY)
    asked = ToolCall(id="call-1", name="read_file", arguments={"path": "notes.txt"})
    steps = [
        Message(role="user", content="say tools"),
        Message(role="assistant", content="", reasoning="read it first", tool_calls=[asked]),
        Message(role="tool", content="no such file", tool_call_id="call-1", name="read_file", is_error=True),
        Message(role="assistant", content="TOOLS"),
    ]
    runs = [
        run(0, "alpha", 0, scorecard=card(1.0, 1.0)),
        run(1, "alpha", 1, scorecard=card(0.0, 1.0)),
        run(2, "beta", 0, scorecard=card(None, 0.5)),
        run(3, "gamma", 0, status="error", error="the model fell over", output=""),
        run(4, "tools", 0, trajectory=steps, scorecard=card(1.0, 1.0)),
    ]
    store = SQLiteStore.in_workspace(root)
    store.put_many(runs)
    store.put_suite(SuiteRecord(id=SUITE, machine="shout", key="k", trials=2, cases=[]))
    store.close()
    return runs


def test_a_suite_is_one_eval_that_inspect_reads_back(tmp_path: Path, invoke: Invoke) -> None:
    seeded(tmp_path)
    out = tmp_path / "logs"
    done = invoke(
        "export", "shout", "--format", "inspect", "--out", out, "--suite", SUITE, "--workspace", tmp_path
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "wrote 5 samples (suite " in done.stdout
    [path] = out.glob("*.eval")
    log = inspect_log.read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.task == "shout" and log.eval.model == "echo" and log.eval.task_version == "v2"
    assert log.eval.run_id == SUITE
    samples = {(s.id, s.epoch): s for s in log.samples or []}
    assert sorted(samples) == [("alpha", 1), ("alpha", 2), ("beta", 1), ("gamma", 1), ("tools", 1)]

    first = samples[("alpha", 1)]
    assert first.scores is not None
    assert first.scores["loud"].value == 1.0 and first.scores["short"].value == 1.0
    assert samples[("alpha", 2)].scores["loud"].value == 0.0
    unscored = samples[("beta", 1)].scores
    assert unscored is not None and math.isnan(unscored["loud"].as_float())  # Inspect's unscored, not 0
    assert unscored["loud"].explanation == "the judge gave no verdict"
    assert unscored["short"].value == 0.5
    assert samples[("gamma", 1)].error is not None
    assert samples[("gamma", 1)].error.message == "the model fell over"
    assert samples[("gamma", 1)].scores is None

    assert first.metadata["trial"] == 0 and first.metadata["version"] == "v2"
    assert first.metadata["cost_usd"] == pytest.approx(0.001)
    assert first.model_usage["echo"].input_tokens == 100
    assert first.model_usage["echo"].input_tokens_cache_read == 10
    assert first.model_usage["echo"].total_cost == pytest.approx(0.001)
    assert first.output.completion == "ALPHA"
    assert first.messages[0].role == "system"

    tools = samples[("tools", 1)]
    roles = [m.role for m in tools.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = tools.messages[2].tool_calls[0]
    assert (call.id, call.function, call.arguments) == ("call-1", "read_file", {"path": "notes.txt"})
    result = tools.messages[3]
    assert result.tool_call_id == "call-1" and result.error is not None
    assert tools.messages[2].text == "" and "read it first" in str(tools.messages[2].content)

    assert log.results is not None
    loud = next(score for score in log.results.scores if score.name == "loud")
    assert (loud.scored_samples, loud.unscored_samples) == (3, 2)
    assert loud.metrics["mean"].value == pytest.approx(2 / 3)
    assert log.stats.model_usage["echo"].input_tokens == sum(100 + i for i in range(5))

    _served_by_inspect_view(out, path.name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _served_by_inspect_view(folder: Path, name: str) -> None:
    """``inspect view`` on a loopback port lists the log and serves it whole."""
    port = _free_port()
    env = clean_env({"XDG_DATA_HOME": str(folder.parent / "data"), "INSPECT_LOG_DIR": str(folder)})
    command = [str(Path(sys.executable).parent / "inspect"), "view", "--log-dir", str(folder)]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    base = f"http://127.0.0.1:{port}/api"
    try:
        listing = _get(f"{base}/log-files", process)
        names = [Path(entry["name"]).name for entry in listing["files"]]
        assert names == [name]
        served = _get(f"{base}/logs/{listing['files'][0]['name']}", process)
        assert served["eval"]["task"] == "shout"
        assert len(served["samples"]) == 5
    finally:
        end(process)


def _get(url: str, process: subprocess.Popen[bytes], wait_s: float = 60.0) -> Any:
    """The JSON at ``url``, retried until the server answers (within ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.loads(response.read())
        except OSError:
            assert process.poll() is None, "inspect view exited"
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def test_newest_runs_and_the_filters_it_refuses(tmp_path: Path, invoke: Invoke) -> None:
    seeded(tmp_path)
    out = tmp_path / "logs"
    done = invoke(
        "export", "shout", "--format", "inspect", "--out", out, "--limit", "2", "--workspace", tmp_path
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    [path] = out.glob("*.eval")
    log = inspect_log.read_eval_log(str(path))
    assert sorted(str(s.id) for s in log.samples or []) == ["gamma", "tools"]

    refused = invoke(
        "export", "shout", "--format", "inspect", "--out", out, "--min-score", "0.5", "--workspace", tmp_path
    )
    assert refused.exit_code == 2 and "--min-score selects runs to train on" in refused.stderr
    both = invoke(
        "export",
        "shout",
        "--format",
        "inspect",
        "--out",
        out,
        "--suite",
        SUITE,
        "--limit",
        "3",
        "--workspace",
        tmp_path,
    )
    assert both.exit_code == 2 and "not both" in both.stderr
    plain = invoke(
        "export", "shout", "--out", tmp_path / "x.jsonl", "--suite", SUITE, "--workspace", tmp_path
    )
    assert plain.exit_code == 2 and "add --format inspect" in plain.stderr
    missing = invoke(
        "export", "shout", "--format", "inspect", "--out", out, "--suite", "nope", "--workspace", tmp_path
    )
    assert missing.exit_code == 2 and "there is no suite 'nope'" in missing.stderr


def test_without_the_extra_it_says_what_to_install(
    tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded(tmp_path)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect_ai were not installed
    done = invoke(
        "export", "shout", "--format", "inspect", "--out", tmp_path / "logs", "--workspace", tmp_path
    )
    assert done.exit_code == 2 and "pip install 'machine[inspect]'" in done.stderr
    assert not (tmp_path / "logs").exists()
