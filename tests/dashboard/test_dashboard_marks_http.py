"""Changes made through ``machine dashboard`` (a real process, over real HTTP on loopback): a mark is a
POST of JSON that needs the page's own Origin and a CSRF token that very server put in the page (or, off
loopback, the bearer token); everything else is refused and changes nothing, neither the run nor the
spending log. A mark made is stored as the chat's are and logged as the dashboard's; the review queue
answers the runs still waiting for a verdict, of each kind. Every wait is bounded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers.dashboard import Served, dashboard, make_workspace, stored_run

from machine.dashboard import TOKEN_ENV
from machine.measure import Disagreements
from machine.runs import SQLiteStore

pytestmark = pytest.mark.slow
LIMIT_S = 10.0
TOKEN = "m" * 20 + "-a-dashboard-token-of-44-chars"
TARGET = "20261101-000002-run0002"
"""v1's gamma: a decided fail (0.5 against a pass score of 1), unmarked."""
OBSERVED = "20261101-000040-run0040"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dashboard's workspace, an observed run, and disagreements kept by an earlier ``agree``."""
    root = make_workspace(tmp_path_factory.mktemp("ws"))
    store = SQLiteStore.in_workspace(root)
    store.put_many([stored_run(40, observed=True), stored_run(41, observed=True, tags=[])])
    failing = store.get(TARGET).scorecard
    store.put(stored_run(50, sampled_for="rl-1 step 2", scorecard=failing))  # not the queue's to judge
    store.close()
    kept = Disagreements(
        criterion="loud", reference="check:loud", candidate="judge", at="2026-11-02T00:00:00Z",
        runs=["20261101-000011-run0011", "20261101-000032-run0032", "no-such-run"],
    )  # fmt: skip
    folder = root / ".machine" / "agreements"
    folder.mkdir(parents=True)
    (folder / "shout.json").write_text(json.dumps({"loud": kept.model_dump(mode="json")}))
    return root


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running


def csrf(served: Served) -> str:
    """The token the page carries."""
    page = httpx.get(served.url, timeout=LIMIT_S).text
    found = re.search(r'<meta name="machine-csrf" content="([^"]+)">', page)
    assert found is not None, page
    return found.group(1)


def post(served: Served, run: str, body: object, **headers: str) -> httpx.Response:
    url = served.url.rstrip("/") + f"/api/runs/{run}/marks"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"content-type": "application/json", **headers}
    return httpx.post(url, content=content, headers=sent, timeout=LIMIT_S)


def own(served: Served) -> dict[str, str]:
    """The headers of the dashboard's own page: its Origin and a token it made."""
    return {"origin": served.url.rstrip("/"), "x-machine-csrf": csrf(served)}


def state(root: Path) -> tuple[list[str], str]:
    """The target run's tags and the spending log, to see that nothing changed."""
    store = SQLiteStore.in_workspace(root)
    tags = [t.kind for t in store.get(TARGET).tags]
    store.close()
    return tags, (root / ".machine" / "spending.jsonl").read_text()


def test_each_page_carries_a_token_of_its_own(served: Served) -> None:
    first, second = csrf(served), csrf(served)
    assert first != second and len(first) > 64


def test_a_change_without_the_pages_token_or_origin_is_refused_and_changes_nothing(
    served: Served, root: Path
) -> None:
    before = state(root)
    origin = served.url.rstrip("/")
    good = {"kind": "bad", "note": "too quiet"}
    token = csrf(served)
    forged = token.rsplit(".", 1)[0] + "." + "0" * 64
    refused = [
        post(served, TARGET, good, origin=origin),  # no token
        post(served, TARGET, good, **{"x-machine-csrf": token}),  # no Origin
        post(served, TARGET, good, origin="http://evil.example", **{"x-machine-csrf": token}),
        post(served, TARGET, good, origin="null", **{"x-machine-csrf": token}),
        post(served, TARGET, good, origin=origin, **{"x-machine-csrf": forged}),
        post(served, TARGET, good, origin=origin, **{"x-machine-csrf": "1.x." + "a" * 64}),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
    assert "CSRF" in refused[0].json()["error"] and "other sites" in refused[2].json()["error"]
    form = httpx.post(
        served.url.rstrip("/") + f"/api/runs/{TARGET}/marks",
        content=b"kind=bad&note=too+quiet",
        headers={**own(served), "content-type": "application/x-www-form-urlencoded"},
        timeout=LIMIT_S,
    )
    assert form.status_code == 400 and "application/json" in form.json()["error"]
    assert state(root) == before


def test_bad_bodies_are_refused_in_words(served: Served, root: Path) -> None:
    before = state(root)
    cases = [
        ({"kind": "great"}, 400, "kind"),
        ({"kind": "bad"}, 400, "needs a note"),
        ({"kind": "bad", "note": "x", "answer": "y"}, 400, "answer goes with a good mark"),
        ({"kind": "good", "colour": "red"}, 400, "colour"),
        ({"kind": "bad", "note": "x", "run_again": True, "budget_usd": 0.1}, 400, "goes with a correction"),
        ({"kind": "correction", "note": "x", "run_again": True, "budget_usd": 50}, 400, "budget_usd"),
        (b"{not json", 400, "not JSON"),
        (json.dumps({"kind": "good", "answer": "A" * 300_000}).encode(), 413, "larger than"),
    ]
    for body, status, words in cases:
        answer = post(served, TARGET, body, **own(served))
        assert (answer.status_code, words in answer.json()["error"]) == (status, True), answer.text
    missing = post(served, "no-such-run", {"kind": "good"}, **own(served))
    assert missing.status_code == 404
    assert state(root) == before


def test_a_mark_is_stored_as_the_chats_and_logged_as_the_dashboards(served: Served, root: Path) -> None:
    answer = post(served, TARGET, {"kind": "bad", "note": "  too quiet  "}, **own(served))
    assert answer.status_code == 200, answer.text
    assert [(t["kind"], t["note"]) for t in answer.json()["tags"]] == [("bad", "too quiet")]
    again = post(served, TARGET, {"kind": "good", "answer": "GAMMA"}, **own(served))
    assert [(t["kind"], t["answer"]) for t in again.json()["tags"]] == [("good", "GAMMA")]  # one verdict
    store = SQLiteStore.in_workspace(root)
    tags = store.get(TARGET).tags
    store.close()
    assert [(t.kind, t.answer) for t in tags] == [("good", "GAMMA")]
    lines = [json.loads(line) for line in (root / ".machine" / "spending.jsonl").read_text().splitlines()]
    marks = [e for e in lines if e.get("by") == "dashboard" and e["run"] == TARGET]
    assert [(e["tool"], e["kind"], e["consent"]["how"], e["spent_usd"]) for e in marks] == [
        ("mark", "bad", "dashboard", 0.0),
        ("mark", "good", "dashboard", 0.0),
    ]
    assert marks[0]["consent"]["detail"] == "marked bad: too quiet" and marks[0]["at"].endswith("Z")


def queued(served: Served, kind: str) -> list[str]:
    url = served.url.rstrip("/") + f"/api/review?machine=shout&kind={kind}"
    answer = httpx.get(url, timeout=LIMIT_S)
    assert answer.status_code == 200, answer.text
    return [r["id"][-7:] for r in answer.json()["runs"]]


def test_the_review_queue_answers_the_runs_waiting_for_a_verdict(served: Served) -> None:
    failing = queued(served, "failing")
    assert set(failing) <= {"run0013", "run0003", "run0002", "run0001"} and failing == sorted(failing)[::-1]
    first = f"20261101-0000{failing[0][-2:]}-{failing[0]}"
    assert post(served, first, {"kind": "correction", "note": "louder"}, **own(served)).status_code == 200
    assert queued(served, "failing")[0] == failing[0]  # a correction alone leaves it waiting
    assert post(served, first, {"kind": "bad", "note": "quiet"}, **own(served)).status_code == 200
    assert queued(served, "failing") == failing[1:]
    assert queued(served, "unscored") == ["run0031"]
    assert queued(served, "observed") == ["run0041", "run0040"]
    assert queued(served, "disagreeing") == ["run0011"]  # run0032 is marked good; one is gone
    unknown = httpx.get(served.url + "api/review?machine=shout&kind=later", timeout=LIMIT_S)
    assert unknown.status_code == 400 and "failing" in unknown.json()["error"]


def test_off_loopback_the_bearer_token_makes_changes_and_the_cookie_alone_does_not(root: Path) -> None:
    with dashboard(root, "--host", "0.0.0.0", env={TOKEN_ENV: TOKEN}) as open_to_all:
        url = open_to_all.url.replace("0.0.0.0", "127.0.0.1")
        served = Served(open_to_all.process, url, open_to_all.head)
        body = {"kind": "correction", "note": "from a script"}
        bearer = post(served, OBSERVED, body, authorization=f"Bearer {TOKEN}")
        assert bearer.status_code == 200, bearer.text
        cookie = post(served, OBSERVED, body, cookie=f"machine_dashboard={TOKEN}", origin=url.rstrip("/"))
        assert cookie.status_code == 403
        wrong = post(served, OBSERVED, body, authorization="Bearer " + "x" * 44)
        assert wrong.status_code == 401


def test_the_runs_page_lists_an_rl_sample_unless_asked_not_to(served: Served) -> None:
    def listed(query: str) -> list[str]:
        answer = httpx.get(served.url + f"api/runs?machine=shout&outcome=fail{query}", timeout=LIMIT_S)
        assert answer.status_code == 200, answer.text
        return [r["id"][-7:] for r in answer.json()["runs"]]

    assert "run0050" in listed("") and "run0050" not in listed("&samples=false")
