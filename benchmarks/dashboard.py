"""``machine dashboard`` on stores of growing size, in headless Chromium (Debian's, through Playwright).

For each store size (1,000 runs, the anchor, then 10,000 and 100,000 by default; filled with
``put_many``, the runs of ``benchmarks/store.py``, 90% of them one machine's), a fresh ``machine
dashboard --port 0`` is started on it and measured:

- **First paint of the runs page**: a new page opens ``#/runs/bench``; the time from the navigation's
  start (``performance.timeOrigin``) to the moment its first page of runs is in the table (the page marks
  itself ready), RUNS times, the median. Target: at most 1 s at 100,000 runs.
- **First paint of the machines page**: the same for ``#/``, until every machine's figures over its
  newest runs (mean, pass rate, unscored, trend, spend, the criterion failing most) are in its table.
  Target: at most 1 s at 100,000 runs.
- **First paint of a machine's failures**: the same for ``#/machine/bench``, until its criterion table and
  its failing runs grouped by reason are drawn (with its charts: the page draws at once). Target: at most
  1 s at 100,000 runs.
- **A new run visible**: with the runs page open, a run is stored (by this process, as another process
  would) and the time until its row is in the page (read from the page's clock, which shares the epoch),
  RUNS times, the median. Target: at most 1 s.
- **A mark visible to ``machine tagged``**: on the newest run's page, *good…* then *mark good* is
  clicked, and the time is taken from the click until the store holds the mark, and until ``machine
  tagged --json --limit 1`` and ``machine tagged --json`` (20 rows), each started then, have listed it
  (the command's own start-up included), RUNS times, the median. Target: at most 1 s.
- **Server memory**: the dashboard's resident memory (``VmRSS``) after every page has been drawn once
  (runs, one run, quality and spend, a comparison of two versions, the machines). Target: flat in the
  number of runs (the largest store's within 1.25x the anchor's).

Prints figures and asserts nothing.

    .venv/bin/python benchmarks/dashboard.py            # 1,000 / 10,000 / 100,000 runs
    .venv/bin/python benchmarks/dashboard.py --quick    # 1,000 / 20,000 runs
"""

from __future__ import annotations

import argparse
import os
import random
import re
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import START, make_run

from machine.runs import SQLiteStore

MACHINE_BIN = Path(sys.executable).parent / "machine"
CHROMIUM = "/usr/bin/chromium"
TARGET_PAINT_S = 1.0
TARGET_VISIBLE_S = 1.0
TARGET_MARKED_S = 1.0
TARGET_MEMORY = 1.25
BATCH = 5_000


def fill(root: Path, runs: int) -> None:
    """``runs`` runs: 90% of machine ``bench`` (half v1, half v2), the rest of ``other``."""
    rng = random.Random(7)
    store = SQLiteStore.in_workspace(root)
    made = 0
    while made < runs:
        batch = []
        for i in range(made, min(runs, made + BATCH)):
            machine = "bench" if i % 10 else "other"
            run = make_run(rng, machine, START + timedelta(seconds=i))
            batch.append(run.model_copy(update={"version": "v1" if i % 2 else "v2", "case_id": f"c{i % 50}"}))
        store.put_many(batch)
        made += len(batch)
    store.close()


def start(root: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHINE")}
    process = subprocess.Popen(
        [str(MACHINE_BIN), "dashboard", "--port", "0", "--workspace", str(root)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    watch = selectors.DefaultSelector()
    watch.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and watch.select(timeout=deadline - time.monotonic()):
        found = re.search(r"(http://\S+/)", process.stderr.readline())
        if found:
            return process, found.group(1)
    process.kill()
    raise SystemExit("machine dashboard did not start")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_paint(
    browser: Any, url: str, route: str = "#/runs/bench", drawn: str = "[data-testid=run-row]"
) -> float:
    """Seconds from a new page's navigation to ``route`` until ``drawn`` is in it (the page's clock)."""
    page = browser.new_page()
    page.goto(url + route)
    page.wait_for_selector(f'body[data-ready="{route}"] {drawn}', timeout=30_000)
    seconds = page.evaluate("performance.now()") / 1000
    page.close()
    return float(seconds)


MACHINES_DRAWN = "[data-testid=machines] tr[data-machine=bench] [data-testid=mean]"
"""The machines page's figures, drawn (its rows come with them, from one answer)."""
FAILURES_DRAWN = "[data-testid=failure-groups]"
"""A machine's page with its failing runs grouped by reason, drawn in one go with its criterion table
(and its charts)."""


def visible(page: Any, root: Path, n: int) -> float:
    """Seconds from storing a new run to its row in the open runs page."""
    run = make_run(random.Random(n), "bench", START + timedelta(days=400 + n))
    page.evaluate(
        """(id) => new Promise((resolve) => {
            const seen = () => document.querySelector(`[data-run="${id}"]`);
            window.__seenAt = null;
            new MutationObserver((_, observer) => {
                if (seen()) { window.__seenAt = Date.now(); observer.disconnect(); }
            }).observe(document.body, { childList: true, subtree: true });
            resolve();
        })""",
        run.id,
    )
    store = SQLiteStore.in_workspace(root)
    stored = time.time()
    store.put(run)
    store.close()
    page.wait_for_function("window.__seenAt !== null", timeout=30_000)
    return float(page.evaluate("window.__seenAt")) / 1000 - stored


def tagged_s(root: Path, answer: str, *limit: str) -> float:
    """Seconds ``machine tagged --json`` (with ``limit``, e.g. ``--limit 1``) takes to list ``answer``."""
    began = time.monotonic()
    listed = subprocess.run(
        [str(MACHINE_BIN), "tagged", "--json", *limit, "--workspace", str(root)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert answer in listed, listed
    return time.monotonic() - began


def marked(page: Any, url: str, root: Path, n: int) -> tuple[float, float, float]:
    """Seconds from clicking *mark good* on the newest run's page until the store holds the mark; then
    how long ``machine tagged --limit 1`` and ``machine tagged`` (20 rows) take to list it."""
    store = SQLiteStore.in_workspace(root)
    newest = store.runs("bench", 1)[0].id
    page.goto(url + f"#/run/{newest}")
    page.wait_for_selector("[data-testid=mark-good]")
    page.click("[data-testid=mark-good]")
    answer = f"the answer, take {n}"
    page.fill("[data-testid=mark-answer]", answer)
    clicked = time.monotonic()
    page.click("[data-testid=mark-save]")
    while not any(t.answer == answer for t in store.get(newest).tags):
        if time.monotonic() - clicked > 30:
            raise SystemExit("the mark never reached the store")
        time.sleep(0.002)
    stored = time.monotonic() - clicked
    store.close()
    return stored, tagged_s(root, answer, "--limit", "1"), tagged_s(root, answer)


def measure(browser: Any, runs: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        began = time.monotonic()
        fill(root, runs)
        print(f"  {runs:,} runs stored in {time.monotonic() - began:.1f} s", flush=True)
        process, url = start(root)
        try:
            paints = [first_paint(browser, url) for _ in range(repeat)]
            machines = [first_paint(browser, url, "#/", MACHINES_DRAWN) for _ in range(repeat)]
            failures = [first_paint(browser, url, "#/machine/bench", FAILURES_DRAWN) for _ in range(repeat)]
            page = browser.new_page()
            for route in ("#/", "#/machine/bench", "#/compare/bench?by=version&a=v1&b=v2", "#/runs/bench"):
                page.goto(url + route)
                page.wait_for_selector(f'body[data-ready="{route}"]', timeout=60_000)
            page.click("[data-testid=run-row] a")
            page.wait_for_selector("[data-testid=trajectory]")
            page.goto(url + "#/runs/bench")
            page.wait_for_selector('body[data-ready="#/runs/bench"]')
            shown = [visible(page, root, n) for n in range(repeat)]
            marks = [marked(page, url, root, n) for n in range(repeat)]
            memory = rss_mb(process.pid)
            page.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    return {
        "paint": statistics.median(paints),
        "machines": statistics.median(machines),
        "failures": statistics.median(failures),
        "visible": statistics.median(shown),
        "stored": statistics.median(m[0] for m in marks),
        "tagged": statistics.median(m[0] + m[1] for m in marks),
        "tagged_20": statistics.median(m[0] + m[2] for m in marks),
        "memory": memory,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [1_000, 20_000] if args.quick else [1_000, 10_000, 100_000]
    repeat = 5 if args.quick else 9
    from playwright.sync_api import sync_playwright

    results: dict[int, dict[str, float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for size in sizes:
            print(f"measuring at {size:,} runs", flush=True)
            results[size] = measure(browser, size, repeat)
        browser.close()
    anchor = results[sizes[0]]
    header = ("runs", "first paint", "machines paint", "failures paint", "new run visible", "mark stored")
    header += ("tagged -l 1", "tagged", "server RSS", "RSS / anchor")
    print("\n{:>9}  {:>12}  {:>15}  {:>15}  {:>16}  {:>12}  {:>12}  {:>12}  {:>11}  {:>13}".format(*header))
    for size, r in results.items():
        print(
            f"{size:>9,}  {r['paint']:>10.3f} s  {r['machines']:>13.3f} s  {r['failures']:>13.3f} s  "
            f"{r['visible']:>14.3f} s  {r['stored']:>10.3f} s  {r['tagged']:>10.3f} s  "
            f"{r['tagged_20']:>10.3f} s  "
            f"{r['memory']:>8.1f} MB  {r['memory'] / anchor['memory']:>12.2f}x"
        )
    last = results[sizes[-1]]
    print(
        f"\nat {sizes[-1]:,} runs: first paint {last['paint']:.3f} s (target <= {TARGET_PAINT_S:g} s); "
        f"the machines page with its figures {last['machines']:.3f} s (target <= {TARGET_PAINT_S:g} s); "
        f"a machine's failures by reason {last['failures']:.3f} s (target <= {TARGET_PAINT_S:g} s); "
        f"a new run visible {last['visible']:.3f} s after it is stored (target <= {TARGET_VISIBLE_S:g} s); "
        f"a mark made in the browser in the store {last['stored']:.3f} s after the click, listed by "
        f"machine tagged --limit 1 {last['tagged']:.3f} s after it and by machine tagged (20 rows) "
        f"{last['tagged_20']:.3f} s after it (target <= {TARGET_MARKED_S:g} s); "
        f"server memory {last['memory'] / anchor['memory']:.2f}x the anchor's at {sizes[0]:,} runs "
        f"(target <= {TARGET_MEMORY:g}x)"
    )


if __name__ == "__main__":
    main()
