"""The dashboard in a real browser: headless Chromium (Debian's, driven by Playwright) on ``machine
dashboard`` as a real process. The machines page shows how each machine's newest runs do, the one that
needs attention first; the runs page lists the stored runs and a filter narrows them; a run's page
shows its scorecard's reasons; a run stored by another process appears without a reload, as does a run in
progress; the comparison page shows the known paired difference of two versions; a training record shows
its loss curve. Each page is saved as a screenshot in build/test-artifacts/dashboard/."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.browser import WAIT_MS, cell, playwright_api, shot, visit
from helpers.dashboard import T0, Served, dashboard, make_workspace, stored_run
from helpers.training import Counting, Practising, Tutored, make_caps

from machine import open_workspace
from machine.learn import TrainOptions, train
from machine.learn.rl import RLOptions
from machine.runs import EVENTS_FILE, CriterionScore, EventLog, Run, Scorecard, SQLiteStore, Timings
from machine.spec import open_book

pytestmark = [pytest.mark.slow, pytest.mark.browser]
playwright_api()  # chromium and playwright, or (outside CI) the module skipped


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shout machine's stored runs, and a training record of caps (30 steps, loss falling)."""
    root = make_workspace(tmp_path_factory.mktemp("ws"))
    make_caps(root)
    ws = open_workspace(root, harness=Tutored())
    anyio.run(
        lambda: train(ws, "caps", samples=2, trials=1, options=TrainOptions(batch_size=2), trainer=Counting())
    )
    rl = RLOptions(group=4, cases_per_step=2, rl_steps=4)
    anyio.run(lambda: train(ws, "caps", method="rl", rl=rl, trials=1, trainer=Practising()))
    open_book(root / "machines" / "shout", ws.load("shout"))  # shout's versions.json: v1 live
    store = SQLiteStore.in_workspace(root)
    store.put_many(attention_runs())
    store.close()
    return root


def attention_runs() -> list[Run]:
    """Two machines with runs and no folder: whisper, failing most (1 pass of 4 decided, quiet failing
    twice), and idle, never graded (no pass rate: listed last)."""

    def made(machine: str, i: int, grades: dict[str, float] | None, **fields: Any) -> Run:
        criteria = {
            name: CriterionScore(criterion=name, weight=1.0, grader=f"check:{name}", score=score)
            for name, score in (grades or {}).items()
        }
        card = Scorecard(criteria=criteria, rubric_fingerprint="w", pass_score=1.0) if grades else None
        started = Timings(started_at=T0 + timedelta(minutes=i))
        return Run(id=f"{machine}-{i:02d}", machine=machine, model="echo", harness="echo", input=f"say {i}",
                   cost_usd=0.25, timings=started, scorecard=card, **fields)  # fmt: skip

    return [
        made("whisper", 0, {"quiet": 0.0, "short": 1.0}),  # 0.5, a fail
        made("whisper", 1, {"quiet": 0.0, "short": 0.5}),  # 0.25, a fail
        made("whisper", 2, {"quiet": 1.0, "short": 1.0}),  # a pass
        made("whisper", 3, None, status="error", error="hoarse"),  # 0, a fail
        made("idle", 0, None),
        made("idle", 1, None),
    ]


def pass_rates(root: Path) -> dict[str, tuple[float | None, int]]:
    """Each machine's pass rate over its newest 200 runs, worked out from the runs themselves (a failed run
    a fail, an undecided one neither), and how many runs it has."""
    store = SQLiteStore.in_workspace(root)
    found: dict[str, tuple[float | None, int]] = {}
    for name, count in store.machine_counts().items():
        runs = store.runs(name, 200)
        decided = [
            r.status == "ok" and r.passed is True for r in runs if r.status == "error" or r.passed is not None
        ]
        found[name] = (sum(decided) / len(decided) if decided else None, count)
    store.close()
    return found


def record_id(root: Path, method: str) -> str:
    """The id of the training record of ``method``."""
    for folder in sorted((root / ".machine" / "training").iterdir()):
        if json.loads((folder / "record.json").read_text())["settings"]["method"] == method:
            return folder.name
    raise AssertionError(f"no {method} training record")


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running


def test_the_machines_page_shows_how_each_does_the_one_needing_attention_first(
    page: Any, served: Served, root: Path
) -> None:
    """shout's seeded runs: a mean of 6 over 10 (the failed run a 0), 5 passes of 10 decided, 1 of 11
    unscored, loud below full marks 4 times; whisper: (0.5 + 0.25 + 1 + 0) / 4, 1 pass of 4, quiet
    failing twice. The lowest pass rate first; idle, never graded, last."""
    visit(page, served, "#/")
    rows = page.locator("[data-testid=machines] tbody tr")
    shown = rows.evaluate_all("rows => rows.map((row) => row.dataset.machine)")
    rates = pass_rates(root)
    expected = sorted(rates, key=lambda n: (rates[n][0] is None, rates[n][0] or 0.0, -rates[n][1], n))
    assert shown == expected and shown[0] == "whisper" and shown[-1] == "idle", (shown, rates)
    assert "newest 200 runs" in page.locator("[data-testid=window]").inner_text()
    shout = page.locator('[data-testid=machines] tr[data-machine="shout"]')
    figures = [cell(shout, t) for t in ("live", "mean", "pass-rate", "unscored", "spent", "worst")]
    assert figures == ["v1", "0.60", "50% 5/10", "9% (1)", "$0.0000", "loud 4 fails, mean 0.67"]
    whisper = page.locator('[data-testid=machines] tr[data-machine="whisper"]')
    figures = [cell(whisper, t) for t in ("live", "mean", "pass-rate", "unscored", "spent", "worst")]
    assert figures == ["—", "0.44", "25% 1/4", "0%", "$1.0000", "quiet 2 fails, mean 0.33"]
    idle = page.locator('[data-testid=machines] tr[data-machine="idle"]')
    figures = [cell(idle, t) for t in ("mean", "pass-rate", "unscored", "worst")]
    assert figures == ["—", "—", "100% (2)", "—"]
    assert shout.locator("[data-testid=spark]").get_attribute("data-points") == "1"
    shot(page, "machines")
    shout.locator('a[href="#/runs/shout"]').click()
    page.wait_for_selector('body[data-ready="#/runs/shout"] [data-testid=run-row]')
    visit(page, served, "#/")
    page.locator('[data-testid=machines] tr[data-machine="shout"] a[href="#/machine/shout"]').click()
    page.wait_for_selector('body[data-ready="#/machine/shout"] [data-testid=trend-summary]')


def test_the_runs_page_lists_the_runs_and_a_filter_narrows_them(page: Any, served: Served) -> None:
    visit(page, served, "#/runs/shout")
    rows = page.locator("[data-testid=run-row]")
    assert rows.count() == 11
    shot(page, "runs")
    page.select_option("select[name=outcome]", "fail")
    page.click("form[data-testid=filters] button[type=submit]")
    page.wait_for_selector('body[data-ready="#/runs/shout?outcome=fail"]')
    assert rows.count() == 4  # v1: beta, gamma, delta; v2: delta
    assert all("fail" in text for text in rows.locator("td:nth-child(2)").all_inner_texts())
    shot(page, "runs-filtered")


def test_a_run_shows_its_scorecard_reasons(page: Any, served: Served) -> None:
    visit(page, served, "#/runs/shout?case=beta&version=v1")
    page.click("[data-testid=run-row] a")
    page.wait_for_selector("[data-testid=scorecard]")
    assert page.locator("[data-testid=reason]").all_inner_texts() == ["the reply is not all capitals (beta)"]
    assert page.locator("[data-testid=run-input]").inner_text() == "input 1"
    shot(page, "run")


def test_a_new_run_appears_without_a_reload(page: Any, served: Served, root: Path) -> None:
    visit(page, served, "#/runs/shout")
    page.evaluate("window.notReloaded = true")
    before = page.locator("[data-testid=run-row]").count()
    store = SQLiteStore.in_workspace(root)
    stored = time.monotonic()
    store.put(stored_run(50, case_id="delta", output="NEW"))  # as another process would
    store.close()
    page.wait_for_selector('[data-testid=run-row][data-run$="run0050"]')
    seen_after = time.monotonic() - stored
    assert page.locator("[data-testid=run-row]").count() == before + 1
    assert page.evaluate("window.notReloaded") is True
    assert (
        page.locator("[data-testid=run-row]")
        .first.get_attribute("data-run", timeout=WAIT_MS)
        .endswith("run0050")
    )
    assert seen_after < WAIT_MS / 1000
    shot(page, "runs-new")


def test_a_run_in_progress_shows_up_on_running_now(page: Any, served: Served, root: Path) -> None:
    visit(page, served, "#/running")
    log = EventLog(root / ".machine" / EVENTS_FILE)
    log.emit("run_started", run="live-9", machine="shout", model="echo", input="wake up", case_id=None)
    log.emit("step", run="live-9", machine="shout", type="tool_call", text="", tool="look")
    page.wait_for_selector('[data-testid=running-run][data-run="live-9"] >> text=tool_call look')
    shot(page, "running")
    log.emit("run_finished", run="live-9", machine="shout", status="ok", score=None, output="awake")
    page.wait_for_selector('[data-testid=running-run][data-run="live-9"]', state="detached")
    log.close()


def test_the_comparison_shows_the_paired_difference(page: Any, served: Served) -> None:
    visit(page, served, "#/compare/shout?by=version&a=v1&b=v2")
    summary = page.locator("[data-testid=paired]").inner_text()
    assert summary.startswith("v2 − v1: +0.500 (standard error 0.204, z 2.45) over 4 cases; 3 up, 0 down")
    assert page.locator("[data-testid=moved] li").first.inner_text() == "beta: 0.00 → 1.00 (+1.000)"
    shot(page, "compare")


def test_a_training_record_shows_its_loss_curve(page: Any, served: Served, root: Path) -> None:
    visit(page, served, "#/training")
    page.click(f"[data-testid=trainings] a:text('{record_id(root, 'sft')}')")
    curve = page.wait_for_selector("[data-testid=loss-chart] path[data-series=loss]")
    assert curve is not None and curve.get_attribute("data-points") == "30"
    facts = page.locator("[data-testid=training-facts]").inner_text()
    assert "counting on" in facts and "30 steps" in facts
    assert page.locator("[data-testid=checkpoints] li").count() >= 1
    shot(page, "training")


def test_an_rl_training_charts_its_reward_beside_its_loss(page: Any, served: Served, root: Path) -> None:
    route = f"#/training/{record_id(root, 'rl')}"
    visit(page, served, route)
    reward = page.wait_for_selector("[data-testid=reward-chart] path[data-series=reward]")
    assert reward is not None and reward.get_attribute("data-points") == "4"
    assert page.locator("[data-testid=reward-chart] path[data-series=correct]").count() == 1  # the criterion
    assert page.locator("[data-testid=loss-chart]").count() == 1
    facts = page.locator("[data-testid=training-facts]").inner_text()
    assert "groups of 4 of 2 cases a step, 4 steps, importance_sampling" in facts
    assert "16 runs, marked as this training's" not in facts and "32 runs, marked as this training's" in facts
    shot(page, "training-rl")


def test_a_run_an_unscored_criterion_could_turn_is_undecided_not_a_pass(
    page: Any, served: Served, root: Path
) -> None:
    """1.00 on what was scored, with a criterion UNSCORED: its row and its page say undecided, and the
    pass filter leaves it out (``passed`` is null)."""
    grades = {
        "loud": CriterionScore(criterion="loud", weight=1.0, grader="check:loud", score=1.0, reason="loud"),
        "kind": CriterionScore(criterion="kind", weight=1.0, grader="judge:j", score=None, reason="no key"),
    }
    card = Scorecard(criteria=grades, rubric_fingerprint="f", pass_score=1.0)
    store = SQLiteStore.in_workspace(root)
    store.put(stored_run(60, case_id="omega", scorecard=card))
    store.close()
    visit(page, served, "#/runs/shout?case=omega")
    row = page.locator('[data-testid=run-row][data-run$="run0060"]')
    assert row.locator("td:nth-child(2)").inner_text() == "1.00 undecided"
    visit(page, served, "#/runs/shout?case=omega&outcome=pass")
    assert page.locator("[data-testid=run-row]").count() == 0
    visit(page, served, "#/runs/shout?case=omega")
    page.click("[data-testid=run-row] a")
    page.wait_for_selector("[data-testid=scorecard]")
    assert "1.00 undecided" in page.locator("p.summary").inner_text()
