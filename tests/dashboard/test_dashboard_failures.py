"""A machine's failures first, on ``machine dashboard`` as a real process: its newest runs broken down by
criterion (mean, pass rate, unscored, fails) and its failing runs grouped by the grader's reason, over real
HTTP and in headless Chromium (Debian's, driven by Playwright). Nine failing runs of three reasons (the
reasons of a group differing only in numbers or quoted words) read as three groups, the largest first; a
reason holding markup stays text; the answer stays bounded however many ways a machine fails."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.browser import new_page, shot, visit
from helpers.dashboard import T0, Served, dashboard

from machine.runs import CriterionScore, Run, Scorecard, SQLiteStore, Timings

pytestmark = pytest.mark.slow
LIMIT_S = 10.0
SCRIPT = "<script>window.hacked = 1</script> the total is missing"
"""A grader's reason that would run were it ever set as markup."""


def made(machine: str, i: int, grades: dict[str, tuple[float, str]]) -> Run:
    criteria = {
        name: CriterionScore(criterion=name, weight=1.0, grader=f"check:{name}", score=score, reason=reason)
        for name, (score, reason) in grades.items()
    }
    return Run(
        id=f"{machine}-{i:02d}", machine=machine, model="echo", harness="echo", input=f"list {i}",
        timings=Timings(started_at=T0 + timedelta(minutes=i)),
        scorecard=Scorecard(criteria=criteria, rubric_fingerprint="s", pass_score=1.0),
    )  # fmt: skip


def failing_runs() -> list[Run]:
    """``lists``: nine failing runs of three reasons (four incomplete, three rude, two with markup in
    their reason) among three passes; ``sprawl``: thirty ways of failing, each reason 5,000 characters."""
    fine = ("complete", (1.0, "every item is there")), ("polite", (1.0, "polite"))
    runs = [made("lists", i, dict(fine)) for i in range(3)]
    for i in range(4):
        runs.append(made("lists", 10 + i, {"complete": (0.25 * i, f"expected {i + 3} items, got {i}"),
                                             "polite": (1.0, "polite")}))  # fmt: skip
    for i, word in enumerate(("dull", "silly", "slow")):
        rude = (0.0, f"the reply calls the reader '{word}'")
        runs.append(made("lists", 20 + i, {"complete": (1.0, "all there"), "polite": rude}))
    for i in range(2):
        runs.append(made("lists", 30 + i, {"complete": (0.5, SCRIPT), "polite": (1.0, "polite")}))
    runs += [made("sprawl", i, {f"c{i:02d}": (0.0, f"way {chr(65 + i)} " + "x" * 5000)}) for i in range(30)]
    return runs


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "machines").mkdir()
    store = SQLiteStore.in_workspace(root)
    store.put_many(failing_runs())
    store.close()
    return root


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running


def get(served: Served, path: str) -> httpx.Response:
    return httpx.get(served.url.rstrip("/") + path, timeout=LIMIT_S)


def test_the_failures_are_grouped_by_reason_over_http(served: Served) -> None:
    answer = get(served, "/api/machines/lists/failures").json()
    assert (answer["machine"], answer["window"], answer["runs"], answer["failing"]) == ("lists", 200, 12, 9)
    assert [(g["criterion"], g["count"]) for g in answer["groups"]] == [
        ("complete", 4), ("polite", 3), ("complete", 2),
    ]  # fmt: skip
    incomplete, rude, marked = answer["groups"]
    assert incomplete["reason"] == "expected 6 items, got 3"  # the newest's words
    assert incomplete["run_ids"] == ["lists-13", "lists-12", "lists-11", "lists-10"]
    assert incomplete["mean"] == pytest.approx(0.375) and incomplete["outcome"] == "fail"
    assert rude["reason"] == "the reply calls the reader 'slow'"
    assert marked["reason"] == SCRIPT  # the grader's words, as text
    rows = {c["criterion"]: c for c in answer["criteria"]}
    assert [c["criterion"] for c in answer["criteria"]] == ["complete", "polite"]  # worst first
    assert (rows["complete"]["fails"], rows["complete"]["pass_rate"]) == (6, pytest.approx(6 / 12))
    assert (rows["polite"]["fails"], rows["polite"]["unscored"]) == (3, 0)


def test_the_answer_stays_bounded_and_an_unknown_machine_is_not_found(served: Served) -> None:
    sprawl = get(served, "/api/machines/sprawl/failures")
    answer = sprawl.json()
    assert (len(answer["groups"]), answer["left_out"], answer["left_out_groups"]) == (20, 10, 10)
    assert all(len(g["reason"]) <= 300 and len(g["run_ids"]) <= 5 for g in answer["groups"])
    assert len(sprawl.content) < 20_000
    missing = get(served, "/api/machines/nobody/failures")
    assert missing.status_code == 404 and "there is no machine 'nobody'" in missing.json()["error"]


@pytest.mark.browser
def test_a_machines_failures_are_grouped_by_reason_in_the_browser(served: Served, browser: Any) -> None:
    with new_page(browser) as page:
        visit(page, served, "#/machine/lists")
        page.wait_for_selector("[data-testid=failure-group]")
        groups = page.locator("[data-testid=failure-group]")
        assert groups.locator("[data-testid=group-count]").all_inner_texts() == ["4 runs", "3 runs", "2 runs"]
        assert groups.locator("[data-testid=group-criterion]").all_inner_texts() == [
            "complete", "polite", "complete",
        ]  # fmt: skip
        reasons = groups.locator("[data-testid=group-reason]").all_inner_texts()
        assert reasons == ["expected 6 items, got 3", "the reply calls the reader 'slow'", SCRIPT]
        assert page.locator("[data-testid=failure-groups] script").count() == 0
        assert page.evaluate("window.hacked") is None  # the reason was never markup
        criteria = page.locator("[data-testid=criteria] tbody tr")
        assert [row.get_attribute("data-criterion") for row in criteria.all()] == ["complete", "polite"]
        assert criteria.first.locator("[data-testid=pass-rate]").inner_text() == "50%"
        assert criteria.first.locator("[data-testid=fails]").inner_text() == "6"
        assert page.locator("[data-testid=trend-summary]").count() == 1  # the charts still follow
        shot(page, "machine-failures")
        groups.first.locator("[data-testid=group-run]").first.click()
        page.wait_for_selector('body[data-ready="#/run/lists-13"]')
