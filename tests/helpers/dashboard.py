"""``machine dashboard`` as a real process for the dashboard's tests: started on a free loopback port in a
workspace, its URL read from its first lines (within a bounded time), stopped at the end; and a workspace
with runs to show: passing, failing, failed and unscored runs of a machine, two versions with known
per-case means, a suite, a training record, a spending log; and a request sent byte for byte, for the
crafted headers and paths a client library would refuse or tidy."""

from __future__ import annotations

import json
import re
import selectors
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from helpers.env import MACHINE_BIN, clean_env
from helpers.processes import end
from machine.runs import CriterionScore, Run, Scorecard, SQLiteStore, Tag, Timings

START_S = 30.0
T0 = datetime(2026, 11, 1, tzinfo=UTC)

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine
from .rubric import rubric

machine = define_machine(
    name="shout",
    intent="Shout the input back.",
    instructions="Repeat the input in capital letters.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"loud": check("loud", lambda r: r.output == r.input.upper())}),
)
"""
RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"loud": "The reply is the input in capitals."})
"""

V1 = {"alpha": 1.0, "beta": 0.0, "gamma": 0.5, "delta": 0.0}
V2 = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0, "delta": 0.5}
"""Per-case scores of two versions: v2 - v1 is 0, +1, +0.5, +0.5, a mean of +0.500 (standard error
0.204, z 2.45), beta moving most."""


@dataclass
class Raw:
    status: int
    headers: dict[str, str]


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    head: str


def scorecard(score: float | None, reason: str) -> Scorecard:
    criteria = {
        "loud": CriterionScore(criterion="loud", weight=1.0, grader="check:loud", score=score, reason=reason)
    }
    return Scorecard(criteria=criteria, rubric_fingerprint="f", pass_score=1.0)


def stored_run(i: int, **fields: object) -> Run:
    fields.setdefault(
        "timings",
        Timings(started_at=T0 + timedelta(minutes=i), finished_at=T0 + timedelta(minutes=i, seconds=2)),
    )
    fields.setdefault("output", f"OUTPUT {i}")
    fields.setdefault("input", f"input {i}")
    return Run(id=f"20261101-0000{i:02d}-run{i:04d}", machine="shout", model="echo", harness="echo", **fields)  # type: ignore[arg-type]


def make_workspace(root: Path) -> Path:
    """The shout machine, its runs (two versions, a failed one, an unscored one, a marked one)."""
    folder = root / "machines" / "shout"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY)
    (folder / "rubric.py").write_text(RUBRIC_PY)
    runs: list[Run] = []
    for n, (version, scores) in enumerate((("v1", V1), ("v2", V2))):
        for k, (case, score) in enumerate(scores.items()):
            i = n * 10 + k
            reason = "the reply is in capitals" if score == 1.0 else f"the reply is not all capitals ({case})"
            runs.append(
                stored_run(i, case_id=case, trial=0, version=version, scorecard=scorecard(score, reason))
            )
    # of no version, so the comparison of v1 and v2 is the one above
    good = [Tag(kind="good")]
    runs += [
        stored_run(30, case_id="alpha", status="error", error="the model fell over", output=""),
        stored_run(31, case_id="beta", scorecard=scorecard(None, "the judge gave no verdict")),
        stored_run(32, case_id="gamma", scorecard=scorecard(1.0, "loud"), tags=good),
    ]
    store = SQLiteStore.in_workspace(root)
    store.put_many(runs)
    store.close()
    spending = root / ".machine" / "spending.jsonl"
    entry = {
        "at": "2026-11-01T00:40:00Z",
        "machine": "shout",
        "tool": "suite",
        "spent_usd": 0.25,
        "budget_usd": 1.0,
        "consent": {"how": "command", "detail": "machine suite"},
        "correlation_id": "spend-1",
    }
    spending.write_text(json.dumps(entry) + "\n")
    return root


@contextmanager
def dashboard(root: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    process = subprocess.Popen(
        [str(MACHINE_BIN), "dashboard", "--port", "0", "--workspace", str(root), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
    )
    try:
        yield _ready(process)
    finally:
        end(process)


def _ready(process: subprocess.Popen[str]) -> Served:
    """The URL the dashboard prints once it listens, read within ``START_S``."""
    assert process.stderr is not None
    watch = selectors.DefaultSelector()
    watch.register(process.stderr, selectors.EVENT_READ)
    head: list[str] = []
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if not watch.select(timeout=max(0.0, deadline - time.monotonic())):
            break
        line = process.stderr.readline()
        if not line:
            break
        head.append(line)
        found = re.search(r"machine dashboard: (http://\S+/)", line)
        if found:
            return Served(process, found.group(1), "".join(head))
    process.kill()
    raise AssertionError("machine dashboard did not say where it listens:\n" + "".join(head))


def raw_get(url: str, target: str, headers: list[tuple[str, str]], timeout_s: float = 10.0) -> Raw:
    """``GET target`` sent byte for byte to the server at ``url`` (its headers exactly as given, none
    added: a client library would tidy the crafted ones), and the answer's status and headers."""
    address = urlsplit(url)
    lines = [f"GET {target} HTTP/1.1", *(f"{name}: {value}" for name, value in headers), "Connection: close"]
    with socket.create_connection((address.hostname, address.port), timeout=timeout_s) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := connection.recv(65536)):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = dict((k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in head[1:]))
    return Raw(int(head[0].split()[1]), fields)
