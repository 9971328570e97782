"""Two runs side by side in a real browser (headless Chromium driven by Playwright, on ``machine dashboard``
as a real process): the same case on two versions with their steps aligned row by row (v2's extra tool
call against gaps), each criterion with both graders' reasons and the difference, how the two relate; a
run and its correction; picking two runs on the runs page leads there, and a run's page links to the runs
it is compared with. A model's markup stays text. Screenshots go to build/test-artifacts/dashboard/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import playwright_api, shot, visit
from helpers.dashboard import Served, dashboard
from helpers.pair_runs import CORRECTION, FIX_ID, MARKUP, V1_ID, V2_ID, pair_workspace

pytestmark = [pytest.mark.slow, pytest.mark.browser]
playwright_api()  # skips the module where chromium is missing (fails under CI=true)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pair_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running


def texts(page: Any, selector: str) -> list[str]:
    return [str(t).strip() for t in page.locator(selector).all_inner_texts()]


def test_two_runs_compare_side_by_side(page: Any, served: Served) -> None:
    visit(page, served, f"#/pair?a={V1_ID}&b={V2_ID}")
    assert page.locator("[data-testid=relation]").inner_text() == "case fix on two versions, v1 and v2"
    rows = page.locator("[data-testid=aligned-row]")
    kinds = rows.evaluate_all("rows => rows.map((row) => row.dataset.kind)")
    assert kinds == ["same", "same", "b_only", "b_only", "changed"]
    extra = rows.nth(2)
    assert extra.locator("[data-testid=gap-a]").count() == 1
    assert "calls run_tests" in extra.locator("[data-testid=step-b]").inner_text()
    last = rows.nth(4)
    assert last.locator("[data-testid=step-a] [data-testid=content]").inner_text() == MARKUP
    answer = last.locator("[data-testid=step-b] [data-testid=content]").inner_text()
    assert answer == "fixed: add returns a + b"
    criteria = page.locator("[data-testid=criterion-row]")
    named = criteria.evaluate_all("rows => rows.map((row) => row.dataset.criterion)")
    assert named == ["correct", "tidy", "safe"]
    assert texts(page, "[data-testid=criterion-row] [data-testid=reason-a]") == [
        "check:correct\nthe tests were never run",
        "check:tidy\na short answer",
        "not graded on this criterion",
    ]
    assert texts(page, "[data-testid=criterion-row] [data-testid=reason-b]") == [
        "check:correct\nthe tests pass",
        "check:tidy\na long answer",
        "check:safe\nnothing deleted",
    ]
    assert texts(page, "[data-testid=criterion-row] [data-testid=diff]") == ["+1.00", "-0.50", "—"]
    coloured = [page.locator(f"[data-testid=diff].{tone}").count() for tone in ("pass", "fail")]
    assert coloured == [1, 1]  # up in green, down in red
    assert page.locator("[data-testid=input-both]").inner_text() == "fix the failing test in app.py"
    assert page.locator("[data-testid=output-a]").inner_text() == MARKUP  # shown as text, never run
    assert page.title() != "owned" and page.locator("#view b, #view script").count() == 0
    shot(page, "pair-versions")


def test_a_run_and_its_correction_side_by_side(page: Any, served: Served) -> None:
    visit(page, served, f"#/run/{FIX_ID}")
    link = page.locator("[data-testid=pair-links] a", has_text="compare with the run it corrects")
    link.click()
    route = f"#/pair?a={V1_ID}&b={FIX_ID}"
    page.wait_for_selector(f'body[data-ready="{route}"]')
    relation = page.locator("[data-testid=relation]")
    assert relation.get_attribute("data-relation") == "corrects"
    assert relation.inner_text() == "b corrects a: b is a made again with a person's correction"
    assert page.locator("[data-testid=correction] pre").inner_text() == CORRECTION
    assert (
        page.locator("[data-testid=input-a]").count() == 1
        and page.locator("[data-testid=input-b]").count() == 1
    )
    assert texts(page, "[data-testid=criterion-row] [data-testid=reason-b]") == ["the run is not graded"] * 2
    shot(page, "pair-correction")


def test_a_run_links_to_its_case_on_another_version(page: Any, served: Served) -> None:
    visit(page, served, f"#/run/{V1_ID}")
    link = page.locator("[data-testid=pair-links] a", has_text="compare with case fix on v2")
    assert link.get_attribute("href") == f"#/pair?a={V1_ID}&b={V2_ID}"


def test_picking_two_runs_on_the_runs_page_compares_them(page: Any, served: Served) -> None:
    visit(page, served, "#/runs/tidy")
    button = page.locator("[data-testid=compare-picked]")
    assert button.is_disabled()
    page.locator(f'[data-testid=run-row][data-run="{V2_ID}"] [data-testid=pick]').check()
    assert button.is_disabled()  # one is not a pair
    page.locator(f'[data-testid=run-row][data-run="{V1_ID}"] [data-testid=pick]').check()
    page.locator(f'[data-testid=run-row][data-run="{FIX_ID}"] [data-testid=pick]').check()
    assert button.is_disabled()  # nor are three
    page.locator(f'[data-testid=run-row][data-run="{FIX_ID}"] [data-testid=pick]').uncheck()
    shot(page, "runs-picked")
    button.click()
    page.wait_for_selector(f'body[data-ready="#/pair?a={V1_ID}&b={V2_ID}"] [data-testid=aligned]')
    assert page.locator("[data-testid=aligned-row]").count() == 5
