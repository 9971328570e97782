"""The marginal cost per stored, graded run with tracing off and on, side by side (target: on is at most
10% above off): pulse's figure, an echo suite of 8,001 cases less one of 1 case, through the real
``machine`` command, with tracing sent to a loopback port that accepts OTLP/HTTP and answers 200.

Usage: .venv/bin/python benchmarks/otel.py [ROUNDS]   (needs the ``otel`` extra; a figure, not a test)

The receiver here only counts bytes (a real backend's cost is its own process's, not the run's); the
traces are sent by the exporter process all the same. Rounds alternate off and on; medians are printed.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MACHINE = Path(sys.executable).parent / "machine"
MANY = 8001


class _Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:
        _Sink.received += len(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _workspace() -> Path:
    work = Path(tempfile.mkdtemp(prefix="otel-bench-"))
    m = work / "machines" / "echoer"
    m.mkdir(parents=True)
    (m / "machine.py").write_text(
        textwrap.dedent("""
        from machine import check, define_evaluator, define_machine, define_rubric
        rubric = define_rubric({"says": {"description": "Says the word.", "weight": 1}})
        says = check("says", lambda run: "W" in run.output)
        machine = define_machine(name="echoer", intent="Echo.", instructions="Echo.",
            model="Qwen/Qwen3.8-27B", rubric=rubric, evaluator=define_evaluator(rubric, {"says": says}))
        """)
    )
    return work


def _suite(work: Path, n: int, env: dict[str, str]) -> float:
    (work / "machines" / "echoer" / "cases.json").write_text(
        json.dumps([{"id": f"c{i}", "input": f"W {i}"} for i in range(n)])
    )
    shutil.rmtree(work / ".machine", ignore_errors=True)
    command = [
        str(MACHINE),
        "suite",
        "echoer",
        "--harness",
        "echo",
        "--concurrency",
        "8",
        "--workspace",
        str(work),
    ]
    started = time.perf_counter()
    subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=True
    )
    return time.perf_counter() - started


def _per_run_ms(work: Path, env: dict[str, str]) -> float:
    one = min(_suite(work, 1, env) for _ in range(2))
    return (_suite(work, MANY, env) - one) / (MANY - 1) * 1000


def main() -> None:
    import os

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MACHINE_OTEL"))}
    traced = {**base, "MACHINE_OTEL_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}"}
    work = _workspace()
    off: list[float] = []
    on: list[float] = []
    try:
        for _ in range(rounds):
            off.append(_per_run_ms(work, base))
            on.append(_per_run_ms(work, traced))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.shutdown()
    a, b = statistics.median(off), statistics.median(on)
    offs, ons = ", ".join(f"{x:.3f}" for x in off), ", ".join(f"{x:.3f}" for x in on)
    print(
        f"otel: per stored graded echo run, off {a:.3f} ms | on {b:.3f} ms | {100 * (b - a) / a:+.1f}% "
        f"(target <= +10%) | rounds off {offs}; on {ons} | OTLP bytes received {_Sink.received:,}"
    )


if __name__ == "__main__":
    main()
