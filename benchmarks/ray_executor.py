"""A suite on a Ray cluster against the same suite made in this process, side by side in one run.

A machine with no tools answers each of RUNS cases through the scripted harness, which waits 50 ms per
reply (a model's latency); the suite runs at concurrency 32, graded and stored here, once with the local
executor and once with ``--executor ray`` on a cluster of a head and two worker nodes started on this
computer (loopback only, as the tests start it). Each figure is the suite's wall time from its first run
to its report (the cluster's start and the runners' start are apart, said on their own); throughput is
runs per second, and the Ray executor's overhead per run is the difference in wall time over the runs.
Target: the Ray executor's throughput at least 0.8x the local executor's. Prints figures and asserts
nothing.

    .venv/bin/python benchmarks/ray_executor.py            # 1,000 runs
    .venv/bin/python benchmarks/ray_executor.py --quick    # 200 runs
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import anyio  # noqa: E402
from helpers.ray_cluster import cluster  # noqa: E402

from machine import open_workspace, run_suite  # noqa: E402
from machine.ops import executor_for  # noqa: E402
from machine.workspace import Executor  # noqa: E402

CONCURRENCY = 32
LATENCY_S = 0.05
TARGET = 0.8
MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"answers": "The reply says ok."})
machine = define_machine(
    name="bench", intent="Answer.", instructions="Say ok.", model="bench-model", rubric=rubric,
    evaluator=define_evaluator(rubric, {"answers": check("ok", lambda run: run.output == "ok")}),
)
"""


def workspace(root: Path, runs: int) -> Path:
    folder = root / "machines" / "bench"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(MACHINE_PY)
    (folder / "cases.json").write_text(json.dumps([{"id": f"c{i}", "input": f"q {i}"} for i in range(runs)]))
    script = {"rules": [{"match": ".", "turns": [{"text": "ok", "delay": LATENCY_S}]}]}
    (folder / "script.json").write_text(json.dumps(script))
    return folder / "script.json"


def suite(root: Path, script: Path, executor: Executor | None) -> tuple[float, int]:
    ws = open_workspace(root, harness="scripted", script=script, budget="none")
    ws = ws if executor is None else ws.using(executor=executor)
    spec = ws.load("bench")
    cases = ws.cases("bench")
    started = time.monotonic()
    report = anyio.run(lambda: run_suite(ws, spec, cases, concurrency=CONCURRENCY))
    took = time.monotonic() - started
    assert report.summary.runs == len(cases) and report.summary.mean == 1.0, report.summary
    return took, report.summary.runs


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    runs = 200 if parser.parse_args().quick else 1_000
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        script = workspace(root, runs)
        local_s, done = suite(root, script, None)
        print(f"local executor: {done} runs in {local_s:.2f} s", flush=True)
        began = time.monotonic()
        with cluster(workers=2) as running:
            print(f"a head and two workers started in {time.monotonic() - began:.1f} s", flush=True)
            ws = open_workspace(root, harness="scripted", script=script)
            began = time.monotonic()
            executor = executor_for(
                ws, "ray", address=running.address, concurrency=CONCURRENCY, harness="scripted",
                script=str(script),
            )  # fmt: skip
            assert executor is not None
            import ray

            ray.get([actor.where.remote() for actor in executor.actors])  # type: ignore[attr-defined]
            print(f"runners started on 2 workers in {time.monotonic() - began:.1f} s", flush=True)
            try:
                ray_s, done = suite(root, script, executor)
            finally:
                executor.close()
        print(f"ray executor: {done} runs in {ray_s:.2f} s", flush=True)
    local_rate, ray_rate = runs / local_s, runs / ray_s
    ideal = runs * LATENCY_S / CONCURRENCY
    latency = f"{LATENCY_S * 1000:.0f} ms model latency"
    print(f"\n{runs:,} runs, {latency}, concurrency {CONCURRENCY} (ideal {ideal:.2f} s)")
    print(f"{'executor':<10}{'wall':>9}{'runs/s':>9}")
    print(f"{'local':<10}{local_s:>8.2f}s{local_rate:>9.1f}")
    print(f"{'ray':<10}{ray_s:>8.2f}s{ray_rate:>9.1f}")
    overhead_ms = (ray_s - local_s) / runs * 1000
    print(
        f"\nray throughput {ray_rate / local_rate:.2f}x the local executor's (target >= {TARGET:g}x); "
        f"its overhead {overhead_ms:+.2f} ms a run"
    )


if __name__ == "__main__":
    main()
