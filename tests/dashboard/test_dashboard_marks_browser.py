"""Marking runs in a real browser (headless Chromium driven by Playwright, on ``machine dashboard`` as a
real process): a run marked good with the answer it should have given, another on the same question
marked bad with a note, and a third corrected and made again (after the browser asks) each show in
``machine tagged --json`` and in ``machine export --pairs``, as a chat's marks would; the review queue
walks the failing runs one key per decision; a page of another site posting from the same browser (a
fetch, a plain form) changes nothing. Screenshots go to build/test-artifacts/dashboard/."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import shot, visit
from helpers.dashboard import Served, dashboard, make_workspace, stored_run
from helpers.env import MACHINE_BIN, clean_env

from machine.runs import EditRecord, Message, SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ASKED = "20261101-000050-run0050"
"""Asked the capital of France, answered with a question: to mark good with the right answer."""
ASKED_AGAIN = "20261101-000051-run0051"
"""The same question, answered wrong: to mark bad."""
TO_CORRECT = "20261101-000003-run0003"
DECLINED = EditRecord(
    tool="edit_file", path="app.py", diff="-old\n+<i>new</i>\n", decision="declined", by="terminal"
)
DECLINED_EDIT = Message(
    role="tool", name="edit_file", content="the person declined this change", is_error=True, edits=[DECLINED]
)
"""A change to the person's files they said no to, as the run keeps it."""
"""v1's delta, failing: corrected and made again."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workspace(tmp_path_factory.mktemp("ws"))
    store = SQLiteStore.in_workspace(root)
    question = "What is the capital of France?"
    store.put_many(
        [
            stored_run(50, input=question, output="Is it Lyon?"),
            stored_run(51, input=question, output="<b>Marseille</b>"),
            stored_run(52, trajectory=[Message(role="user", content="tidy"), DECLINED_EDIT]),
        ]
    )
    store.close()
    return root


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root, env={"MACHINE_HARNESS": "echo"}) as running:
        yield running


def machine(root: Path, *args: str) -> str:
    done = subprocess.run(
        [str(MACHINE_BIN), *args, "--workspace", str(root)],
        capture_output=True, text=True, timeout=60, env=clean_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def mark(page: Any, kind: str, text: str, *, again: bool = False) -> str:
    """Open the run's mark form, write ``text``, save; what the page says back."""
    page.click(f"[data-testid=mark-{ {'good': 'good', 'bad': 'bad', 'correction': 'correct'}[kind] }]")
    field = "[data-testid=mark-answer]" if kind == "good" else "[data-testid=mark-note]"
    page.fill(field, text)
    if again:
        page.check("[data-testid=mark-again]")
        page.fill("[data-testid=mark-cap]", "0.05")
    page.click("[data-testid=mark-save]")
    page.wait_for_function(
        "!document.querySelector('[data-testid=mark-said]').textContent.includes('saving')"
    )
    return str(page.inner_text("[data-testid=mark-said]"))


def test_marks_made_in_the_browser_reach_tagged_and_the_pairs(page: Any, served: Served, root: Path) -> None:
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    visit(page, served, f"#/run/{ASKED}")
    assert mark(page, "good", "Paris.") == "marked good"
    assert "good (answer: Paris.)" in page.inner_text("[data-testid=marks]")
    visit(page, served, f"#/run/{ASKED_AGAIN}")
    assert mark(page, "bad", "wrong city") == "marked bad"
    assert page.inner_text("[data-testid=run-output]") == "<b>Marseille</b>"  # text, never markup
    visit(page, served, f"#/run/{TO_CORRECT}")
    said = mark(page, "correction", "shout it", again=True)
    made = page.inner_text("[data-testid=made-again]")
    assert said == f"marked correction · made again as {made} · side by side", said
    assert asked and "model call" in asked[0] and "$0.05" in asked[0]
    shot(page, "marked")

    tagged = {r["id"]: r["tags"] for r in json.loads(machine(root, "tagged", "shout", "--json"))}
    assert [(t["kind"], t["answer"]) for t in tagged[ASKED]] == [("good", "Paris.")]
    assert [(t["kind"], t["note"]) for t in tagged[ASKED_AGAIN]] == [("bad", "wrong city")]
    assert [(t["kind"], t["note"]) for t in tagged[TO_CORRECT]] == [("correction", "shout it")]

    out = root / "pairs.jsonl"
    machine(root, "export", "shout", "--pairs", "--out", str(out))
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    by_kind = {p["metadata"]["kind"]: p for p in pairs}
    verdict = by_kind["verdict"]["metadata"]
    assert (verdict["chosen_run_id"], verdict["rejected_run_id"]) == (ASKED, ASKED_AGAIN)
    assert by_kind["verdict"]["chosen"][0]["content"] == "Paris."
    correction = by_kind["correction"]
    assert correction["metadata"]["rejected_run_id"] == TO_CORRECT
    assert correction["metadata"]["chosen_run_id"] == made
    assert "Correction: shout it" in correction["chosen"][0]["content"]  # the echo model's answer


def test_the_review_queue_advances_one_key_per_decision(page: Any, served: Served, root: Path) -> None:
    visit(page, served, "#/review/shout?kind=failing")
    kinds = "failing · unscored · ungraded · observed · disagreeing"
    assert page.inner_text("[data-testid=review-kinds]") == kinds
    shown = lambda: page.get_attribute("[data-testid=review-facts]", "data-run")  # noqa: E731
    first = shown()
    page.keyboard.press("s")  # skip
    page.wait_for_function(f"document.querySelector('[data-testid=review-facts]')?.dataset.run !== '{first}'")
    second = shown()
    page.keyboard.press("b")
    page.keyboard.type("too quiet")
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"document.querySelector('[data-testid=review-facts]')?.dataset.run !== '{second}'"
    )
    third = shown()
    page.keyboard.press("g")
    page.wait_for_function(f"document.querySelector('[data-testid=review-facts]')?.dataset.run !== '{third}'")
    assert page.inner_text("[data-testid=review-count]") == "2 marked · 1 skipped on this page"
    shot(page, "review")
    store = SQLiteStore.in_workspace(root)
    verdicts = {run: store.get(run).verdict for run in (first, second, third)}
    store.close()
    assert verdicts[first] is None
    assert (verdicts[second].kind, verdicts[second].note) == ("bad", "too quiet")  # type: ignore[union-attr]
    assert verdicts[third].kind == "good"  # type: ignore[union-attr]


ELSEWHERE = "http://elsewhere.test"
"""Another site, served by the test itself (Playwright answers every request to it: nothing leaves)."""


def test_a_page_of_another_site_changes_nothing(page: Any, served: Served, root: Path) -> None:
    """A page elsewhere posts to the dashboard from the person's browser: a fetch of JSON, and a plain
    form (the classic cross-site request); both are refused and no mark or log line is made."""
    target = f"{served.url}api/runs/{TO_CORRECT}/marks"
    html = f"""<!doctype html><form id=f method=post action="{target}" enctype="text/plain">
      <input name='{{"kind":"bad","note":"x","pad":"' value='"}}'></form>"""
    page.route(
        f"{ELSEWHERE}/**", lambda route: route.fulfill(status=200, content_type="text/html", body=html)
    )
    before = marks_and_log(root)
    page.goto(f"{ELSEWHERE}/")
    status = page.evaluate(
        """async (target) => {
            try {
                const body = JSON.stringify({ kind: "bad", note: "from elsewhere" });
                const headers = { "content-type": "application/json" };
                const r = await fetch(target, { method: "POST", headers, body });
                return r.status;
            } catch (error) { return "blocked"; }
        }""",
        target,
    )
    assert status in (403, "blocked")  # refused by the server, or not even sent by the browser
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")
    assert "requests from other sites are refused" in page.content()
    assert marks_and_log(root) == before


def marks_and_log(root: Path) -> tuple[list[str], str]:
    store = SQLiteStore.in_workspace(root)
    tags = [t.model_dump_json() for t in store.get(TO_CORRECT).tags]
    store.close()
    return tags, (root / ".machine" / "spending.jsonl").read_text()


def test_a_runs_page_shows_each_change_it_asked_about_and_the_answer(page: Any, served: Served) -> None:
    visit(page, served, "#/run/20261101-000052-run0052")
    edit = page.locator("[data-testid=edit]")
    assert edit.get_attribute("data-decision") == "declined"
    assert edit.locator("summary").inner_text().startswith("change to app.py declined by terminal at ")
    edit.locator("summary").click()
    assert edit.locator("pre").inner_text() == "-old\n+<i>new</i>\n"  # the diff as text, never markup
