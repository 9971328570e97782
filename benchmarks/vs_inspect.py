"""machine vs Inspect AI on the same job: marginal cost per run, cold start and peak memory.

The job, on each side:
  ours     a machine with no tools, the echo harness and one check grader (does the reply include the
           case's target?): ``machine suite bench --harness echo --workspace TMP --concurrency 4``
  Inspect  a task with N samples, the ``generate()`` solver and the ``includes()`` scorer:
           ``inspect eval task.py --model mockllm/model --log-dir TMP --display none``, its model the
           fastest of ``CANDIDATES`` (mockllm with an echo function, an echo provider registered with
           ``@modelapi``, mockllm's fixed reply; mockllm as shipped where it would not download), each
           measured on the same samples first and printed

Both reply with the input and both score every sample 1; after each command the script checks that the
store holds N graded runs and that the Inspect log holds N scored samples. Every command runs as a fresh
process inside a fresh wrapper process, which reports its wall time and peak RSS
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the largest process of the tree it waited for).

Inspect AI is a benchmark-only dependency: it lives in benchmarks/.venv-inspect (git-ignored), which this
script creates when it is missing. The script prints figures and asserts nothing.

    .venv/bin/python benchmarks/vs_inspect.py            # N = 1, 2,000, 5,000, 20,000 (about 6 minutes)
    .venv/bin/python benchmarks/vs_inspect.py --quick    # N = 1, 500, 1,000, 2,000 (about 1 minute)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSPECT_VENV = ROOT / "benchmarks" / ".venv-inspect"
INSPECT_BIN = INSPECT_VENV / "bin"

# Targets: ours over Inspect's figure measured in the same run.
MARGINAL_TARGET = 0.25  # ours <= a quarter of Inspect's
COLD_TARGET = 1 / 3  # ours <= a third of Inspect's
MEMORY_TARGET = 1 / 3
FLAT_CASES = 100  # the runs-only memory line: N runs as 100 cases x N/100 trials

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric({"includes": {"description": "The reply includes the case's target.", "weight": 1}})
"""

MACHINE_PY = """\
from machine import Run, check, define_evaluator, define_machine

from .rubric import rubric


def includes(run: Run) -> tuple[bool, str]:
    target = str((run.case or {}).get("target", ""))
    found = target in run.output
    return found, "the reply includes the target" if found else f"the reply lacks {target!r}"


machine = define_machine(
    name="bench",
    intent="Repeat the input.",
    instructions="Repeat the input.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"includes": check("includes", includes)}),
)
"""

# Inspect's side is taken at its fastest honest configuration for the job (every sample answered and
# scored, the log written): each candidate below runs the same N samples first, and the fastest is the
# anchor. Every candidate sets the reply's usage: left to itself, mockllm counts tokens with tiktoken's
# o200k_base, which it downloads on first use, so "mockllm as shipped" is a candidate only where that
# encoding is already in tiktoken's cache (this script sends nothing past this machine).
SAMPLES = """\
N = {n}
DATASET = [Sample(id=f"c{{i}}", input=f"hello {{i}}", target={target}) for i in range(N)]
"""
CANDIDATES: dict[str, str] = {
    "mockllm with an echo function": """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
{samples}

def echo(input, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm", content=input[-1].text)
    output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
    return output


@task
def bench():
    model = get_model("mockllm/model", custom_outputs=echo)
    return Task(dataset=DATASET, solver=generate(), scorer=includes(), model=model)
""",
    "an echo provider (@modelapi)": """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
{samples}

class Echo(ModelAPI):
    async def generate(self, input, tools, tool_choice, config):
        output = ModelOutput.from_content(model=self.model_name, content=input[-1].text)
        output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return output


@modelapi(name="echo")
def echo():
    return Echo


@task
def bench():
    return Task(dataset=DATASET, solver=generate(), scorer=includes(), model="echo/echo")
""",
    "mockllm's fixed reply, usage set": """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
{samples}

def replies():
    while True:
        output = ModelOutput.from_content(model="mockllm", content="Default output from mockllm/model")
        output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        yield output


@task
def bench():
    model = get_model("mockllm/model", custom_outputs=replies())
    return Task(dataset=DATASET, solver=generate(), scorer=includes(), model=model)
""",
    "mockllm as shipped": """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
{samples}

@task
def bench():
    return Task(dataset=DATASET, solver=generate(), scorer=includes())
""",
}
FIXED_REPLY = ("mockllm's fixed reply, usage set", "mockllm as shipped")
"""The candidates whose reply is mockllm's own fixed text: their target is a part of it, not the input."""
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def task_source(candidate: str, n: int) -> str:
    target = '"Default output"' if candidate in FIXED_REPLY else 'f"hello {i}"'
    samples = SAMPLES.format(n=n, target=target)
    return CANDIDATES[candidate].format(samples=samples)


def tiktoken_cached() -> bool:
    """Whether tiktoken would find o200k_base without a download (where tiktoken keeps its cache)."""
    import hashlib

    key = hashlib.sha1(O200K_URL.encode()).hexdigest()
    folders = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR")]
    folders.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    return any(folder and os.path.isfile(os.path.join(folder, key)) for folder in folders)


# What the Inspect log says: status, samples completed, accuracy.
READ_LOG_PY = """\
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
log = read_eval_log(list_eval_logs(sys.argv[1])[0], header_only=True)
r = log.results
accuracy = r.scores[0].metrics["accuracy"].value if r and r.scores else None
print(json.dumps({"status": log.status, "completed": r.completed_samples if r else 0, "accuracy": accuracy}))
"""

# Runs one command in a fresh process and prints its wall time and peak RSS as JSON.
WRAPPER_PY = """\
import json, resource, subprocess, sys, time
with open(sys.argv[1], "wb") as log:
    start = time.perf_counter()
    rc = subprocess.call(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": rc, "wall_s": wall, "maxrss_kb": rss}))
"""


@dataclass
class Measure:
    wall_s: float
    rss_mb: float
    done: int
    """Runs in the store, or samples the Inspect log reports completed."""


def python3() -> str:
    return shutil.which("python3") or getattr(sys, "_base_executable", sys.executable)


def machine_command() -> str:
    for candidate in (ROOT / ".venv" / "bin" / "machine", Path(sys.executable).parent / "machine"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("machine")
    if not found:
        sys.exit("error: no `machine` command; run `make install` (it creates .venv) first")
    return found


def ensure_inspect() -> str:
    inspect = INSPECT_BIN / "inspect"
    if inspect.exists():
        return str(inspect)
    print(f"creating {INSPECT_VENV.relative_to(ROOT)} and installing inspect-ai (once) ...", flush=True)
    log = ROOT / "benchmarks" / "out" / "inspect-install.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        for step in (
            [python3(), "-m", "venv", str(INSPECT_VENV)],
            [str(INSPECT_BIN / "pip"), "install", "-q", "inspect-ai"],
        ):
            if subprocess.call(step, stdout=out, stderr=subprocess.STDOUT) != 0:
                sys.exit(f"error: `{' '.join(step)}` failed; see {log}")
    return str(inspect)


def inspect_version() -> str:
    out = subprocess.run(
        [str(INSPECT_BIN / "python"), "-c", "import inspect_ai; print(inspect_ai.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or "?"


class Bench:
    def __init__(self, tmp: Path, machine: str, inspect: str) -> None:
        self.tmp = tmp
        self.machine = machine
        self.inspect = inspect
        self.count = 0
        self.anchor, self.realtime = next(iter(CANDIDATES)), True

    def choose(self, n: int) -> None:
        """Run each candidate on ``n`` samples (after one of each, not counted) and make the fastest the
        anchor, printing every one's time."""
        shipped = tiktoken_cached()
        print(f"\nInspect's configurations, {n:,} samples each (the fastest is the anchor below)")
        if not shipped:
            print(
                "  mockllm as shipped: left out (tiktoken's o200k_base is not cached; it would download it)"
            )
        timed: dict[tuple[str, bool], float] = {}
        for candidate in CANDIDATES:
            if candidate != "mockllm as shipped" or shipped:
                timed[candidate, True] = self._time(candidate, True, n)
        best = min(timed, key=timed.__getitem__)[0]  # and without its live log (the log is still written)
        timed[best, False] = self._time(best, False, n)
        self.anchor, self.realtime = min(timed, key=timed.__getitem__)
        print(f"  the anchor: {self.anchor}{'' if self.realtime else ', --no-log-realtime'}", flush=True)

    def _time(self, candidate: str, realtime: bool, n: int) -> float:
        self.theirs(1, candidate, realtime)  # not counted: its bytecode is compiled
        wall = self.theirs(n, candidate, realtime).wall_s
        label = candidate if realtime else f"{candidate}, --no-log-realtime"
        print(f"  {label:<56} {wall:8.3f} s  {wall / n * 1000:6.2f} ms a sample")
        return wall

    def _measure(self, cmd: list[str], label: str, cwd: Path | None = None) -> tuple[float, float]:
        """Wall seconds and peak RSS in MB of ``cmd``, run in a fresh wrapper process."""
        log = self.tmp / f"{self.count:03d}-{label}.log"
        out = subprocess.run(
            [python3(), "-c", WRAPPER_PY, str(log), *cmd], capture_output=True, text=True, check=True, cwd=cwd
        )
        result = json.loads(out.stdout)
        if result["rc"] != 0:
            sys.exit(f"error: {label} exited {result['rc']}:\n{log.read_text()[-3000:]}")
        return result["wall_s"], result["maxrss_kb"] / 1024

    def ours(self, n: int, cases: int | None = None) -> Measure:
        """``machine suite`` of ``n`` runs: ``cases`` cases (default ``n``), ``n // cases`` trials each."""
        self.count += 1
        cases = cases or n
        ws = self.tmp / f"ws-{self.count:03d}-{n}"
        folder = ws / "machines" / "bench"
        folder.mkdir(parents=True)
        (folder / "rubric.py").write_text(RUBRIC_PY)
        (folder / "machine.py").write_text(MACHINE_PY)
        rows = [{"id": f"c{i}", "input": f"hello {i}", "target": f"hello {i}"} for i in range(cases)]
        (folder / "cases.json").write_text(json.dumps(rows))
        cmd = [
            self.machine,
            "suite",
            "bench",
            "--harness",
            "echo",
            "--workspace",
            str(ws),
            "--concurrency",
            "4",
            "--trials",
            str(n // cases),
        ]
        wall, rss = self._measure(cmd, f"ours-{n}")
        with sqlite3.connect(ws / ".machine" / "store.db") as db:
            stored, scored, passed = db.execute(
                "SELECT count(*), count(score), coalesce(sum(score = 1.0), 0) FROM runs"
            ).fetchone()
        if not stored == scored == passed == n:
            sys.exit(
                f"error: the store in {ws} holds {stored} runs ({scored} scored, {passed} passed); "
                f"expected {n}"
            )
        shutil.rmtree(ws)
        return Measure(wall, rss, stored)

    def theirs(self, n: int, candidate: str | None = None, realtime: bool | None = None) -> Measure:
        """``inspect eval`` of a task of ``n`` samples, in the ``candidate`` configuration, its samples
        logged in real time or not (default the fastest, once ``choose`` has measured them)."""
        self.count += 1
        folder = self.tmp / f"inspect-{self.count:03d}-{n}"
        folder.mkdir()
        (folder / "task.py").write_text(task_source(candidate or self.anchor, n))
        logs = folder / "logs"
        # Inspect takes the task file relative to the current directory.
        cmd = [
            self.inspect,
            "eval",
            "task.py",
            "--model",
            "mockllm/model",
            "--log-dir",
            str(logs),
            "--display",
            "none",
        ]
        if not (self.realtime if realtime is None else realtime):
            cmd.append("--no-log-realtime")
        wall, rss = self._measure(cmd, f"inspect-{n}", cwd=folder)
        read = subprocess.run(
            [str(INSPECT_BIN / "python"), "-c", READ_LOG_PY, str(logs)],
            capture_output=True,
            text=True,
            check=False,
        )
        info = json.loads(read.stdout) if read.returncode == 0 else {}
        if info.get("status") != "success" or info.get("completed") != n or info.get("accuracy") != 1.0:
            sys.exit(
                f"error: the Inspect log in {logs} says {info or read.stderr[-2000:]}; expected {n} samples"
            )
        shutil.rmtree(folder)
        return Measure(wall, rss, info["completed"])


def figure(label: str, ours: float, theirs: float, unit: str, target: float, digits: int = 3) -> str:
    ratio = ours / theirs if theirs else float("inf")
    verdict = "meets" if ratio <= target else "MISSES"
    goal = "ours <= Inspect's" if target == 1.0 else f"ours <= 1/{round(1 / target)} of Inspect's"
    return (
        f"  {label:<36} ours {ours:8.{digits}f} {unit:<3} Inspect {theirs:8.{digits}f} {unit:<3} "
        f"ratio {ratio:.3f}  target {goal}: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller N (about a minute)")
    args = parser.parse_args()
    if args.quick:
        cold_repeats, sizes, (small, big) = 3, [500, 1_000, 2_000], (1_000, 2_000)
    else:
        cold_repeats, sizes, (small, big) = 5, [2_000, 5_000, 20_000], (5_000, 20_000)

    machine = machine_command()
    inspect = ensure_inspect()
    print(f"machine: {machine}\nInspect AI {inspect_version()}: {inspect}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs", flush=True)

    with tempfile.TemporaryDirectory(prefix="machine-vs-inspect-") as tmp:
        bench = Bench(Path(tmp), machine, inspect)
        bench.choose(small // 5)
        # One run each first, not counted, so both start from written bytecode caches as any later use does.
        bench.ours(1)
        bench.theirs(1)

        print(f"\nCold start: one case / one sample, a fresh process each, {cold_repeats} runs each")
        cold_ours = [bench.ours(1) for _ in range(cold_repeats)]
        cold_theirs = [bench.theirs(1) for _ in range(cold_repeats)]
        for name, cold in (("ours", cold_ours), ("Inspect", cold_theirs)):
            walls = sorted(m.wall_s for m in cold)
            print(f"  {name:<8} wall s: " + ", ".join(f"{w:.3f}" for w in walls))
        t1_ours = statistics.median(m.wall_s for m in cold_ours)
        t1_theirs = statistics.median(m.wall_s for m in cold_theirs)

        print("\nN runs, a fresh process each (every run stored and graded, every sample logged and scored)")
        print(f"  {'N':>7}  {'ours s':>8} {'MB':>6} {'stored':>7}   {'Inspect s':>9} {'MB':>6} {'scored':>7}")
        print(
            f"  {1:>7}  {t1_ours:>8.3f} {cold_ours[0].rss_mb:>6.1f} {1:>7}   "
            f"{t1_theirs:>9.3f} {cold_theirs[0].rss_mb:>6.1f} {1:>7}   (median of the cold runs)"
        )
        at: dict[int, tuple[Measure, Measure]] = {}
        for n in sizes:
            ours, theirs = at[n] = bench.ours(n), bench.theirs(n)
            print(
                f"  {n:>7}  {ours.wall_s:>8.3f} {ours.rss_mb:>6.1f} {ours.done:>7}   "
                f"{theirs.wall_s:>9.3f} {theirs.rss_mb:>6.1f} {theirs.done:>7}",
                flush=True,
            )
        # The growth with N above is mostly the cases file, which is loaded whole; with the cases held at
        # FLAT_CASES, the runs alone show whether memory stays flat as runs grow.
        flat = {n: bench.ours(n, cases=FLAT_CASES) for n in (small, big)}
        for n, m in flat.items():
            print(
                f"  {n:>7}  {m.wall_s:>8.3f} {m.rss_mb:>6.1f} {m.done:>7}   "
                f"(ours only: {FLAT_CASES} cases x {n // FLAT_CASES} trials)"
            )

        print("\nFigures")
        for n in sizes:
            ours_ms = (at[n][0].wall_s - t1_ours) / (n - 1) * 1000
            theirs_ms = (at[n][1].wall_s - t1_theirs) / (n - 1) * 1000
            print(figure(f"marginal ms per run, N=1 -> {n:,}", ours_ms, theirs_ms, "ms", MARGINAL_TARGET))
        print(figure("cold start, median wall s", t1_ours, t1_theirs, "s", COLD_TARGET))
        ours_mb, theirs_mb = at[big][0].rss_mb, at[big][1].rss_mb
        print(figure(f"peak RSS at {big:,} runs, MB", ours_mb, theirs_mb, "MB", MEMORY_TARGET, 1))
        growth = at[big][0].rss_mb - at[small][0].rss_mb
        print(
            f"  peak RSS from {small:,} to {big:,} runs: ours {at[small][0].rss_mb:.1f} -> {ours_mb:.1f} MB"
            " "
            f"({growth:+.1f} MB, {growth * 1024 / (big - small):+.2f} KB per run and case), "
            f"Inspect {at[small][1].rss_mb:.1f} -> {theirs_mb:.1f} MB"
        )
        flat_growth = flat[big].rss_mb - flat[small].rss_mb
        print(
            f"  ours with the cases held at {FLAT_CASES}: {flat[small].rss_mb:.1f} -> "
            f"{flat[big].rss_mb:.1f} MB ({flat_growth:+.1f} MB, "
            f"{flat_growth * 1024 / (big - small):+.2f} KB per run)"
        )


if __name__ == "__main__":
    main()
