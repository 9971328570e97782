"""``machine dashboard`` as a real process over real HTTP on loopback: its JSON endpoints answer from the
store, the spending log and the event log; its server-sent events tell of a run as it starts, steps and
finishes, and of a run another process stored; and what it refuses: another Host (421), another origin
than its own (403), and, listening off loopback, a request without its token (401). Every wait is bounded."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from helpers.dashboard import Served, dashboard, stored_run
from helpers.env import MACHINE_BIN, REPO, clean_env

from machine.runs import EVENTS_FILE, EventLog, SQLiteStore

pytestmark = pytest.mark.slow
TOKEN = "d" * 20 + "-a-dashboard-token-of-44-chars"
LIMIT_S = 10.0
STATIC = REPO / "dashboard" / "static"


def get(served: Served, path: str, **headers: str) -> httpx.Response:
    return httpx.get(served.url.rstrip("/") + path, headers=headers, timeout=LIMIT_S)


def test_the_page_and_its_modules_are_served(served: Served) -> None:
    page = get(served, "/")
    assert page.status_code == 200 and '<script type="module" src="/static/app.js">' in page.text
    for module in sorted(STATIC.glob("*.js")):
        script = get(served, f"/static/{module.name}")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert "innerHTML" not in script.text  # model-written text is only ever set as text


def test_machines_and_runs(served: Served) -> None:
    [shout] = get(served, "/api/machines").json()
    assert (shout["name"], shout["runs"], shout["intent"]) == ("shout", 11, "Shout the input back.")
    page = get(served, "/api/runs?machine=shout&limit=4").json()
    assert [r["id"][-7:] for r in page["runs"]] == ["run0032", "run0031", "run0030", "run0013"]
    assert page["next"] is not None
    rest = get(served, f"/api/runs?machine=shout&limit=50&cursor={page['next']}").json()
    assert len(rest["runs"]) == 7 and rest["next"] is None
    failing = get(served, "/api/runs?machine=shout&outcome=fail&version=v1").json()["runs"]
    assert sorted(r["case_id"] for r in failing) == ["beta", "delta", "gamma"]
    assert [r["case_id"] for r in get(served, "/api/runs?machine=shout&tag=good").json()["runs"]] == ["gamma"]
    assert [r["error"] for r in get(served, "/api/runs?machine=shout&outcome=error").json()["runs"]] == [
        "the model fell over"
    ]


def test_each_machine_comes_with_how_its_newest_runs_do(served: Served) -> None:
    """The seeded runs of shout: v1 (1, 0, 0.5, 0) and v2 (1, 1, 1, 0.5), a failed run, one with nothing
    scored and a 1.0: a mean of 6 over 10 (the failed run a 0), 5 passes of 10 decided (the failed run a
    fail), 1 of 11 unscored, and loud below full marks 4 times (beta, gamma, delta of v1, delta of v2)."""
    [shout] = get(served, "/api/machines").json()
    assert (shout["name"], shout["runs"], shout["live_version"]) == ("shout", 11, None)  # no versions.json
    health = shout["health"]
    assert (health["window"], health["runs"], health["errors"], health["scored"]) == (200, 11, 1, 9)
    assert (health["unscored"], health["ungraded"], health["passes"], health["fails"]) == (1, 0, 5, 5)
    assert health["mean"] == pytest.approx(0.6) and health["pass_rate"] == pytest.approx(0.5)
    assert health["unscored_share"] == pytest.approx(1 / 11) and health["spent_usd"] == 0.0
    assert health["trend"] == [pytest.approx(0.6)]
    assert health["newest"] == "2026-11-01T00:32:00Z"
    worst = health["worst"]
    assert (worst["criterion"], worst["fails"], worst["scored"], worst["unscored"]) == ("loud", 4, 9, 1)
    assert worst["mean"] == pytest.approx(6 / 9)


def test_a_bad_filter_or_an_unknown_run_is_refused_in_words(served: Served) -> None:
    bad = get(served, "/api/runs?machine=shout&min_score=2")
    assert bad.status_code == 400 and "min_score" in bad.json()["error"]
    assert get(served, "/api/runs?limit=0").status_code == 400
    missing = get(served, "/api/runs/nope")
    assert missing.status_code == 404 and "there is no run 'nope'" in missing.json()["error"]
    # the break: it told an HTTP client to call `handle.workspace.store.runs(handle.name)`
    assert missing.json()["error"].endswith("; `GET /api/runs?machine=NAME` lists them")
    assert "handle." not in missing.json()["error"] and "--" not in missing.json()["error"]
    assert get(served, "/api/training/nope").status_code == 404
    assert get(served, "/api/compare?machine=shout").status_code == 400


def test_one_run_whole(served: Served) -> None:
    run_id = get(served, "/api/runs?machine=shout&case=beta&version=v1").json()["runs"][0]["id"]
    run = get(served, f"/api/runs/{run_id}").json()
    assert run["scorecard"]["criteria"]["loud"]["reason"] == "the reply is not all capitals (beta)"
    assert (run["input"], run["output"], run["version"]) == ("input 1", "OUTPUT 1", "v1")


def test_the_comparison_of_two_versions(served: Served) -> None:
    c = get(served, "/api/compare?machine=shout&by=version&a=v1&b=v2").json()
    assert (c["compared"], c["up"], c["down"]) == (4, 3, 0)
    assert c["diff"] == pytest.approx(0.5) and c["se"] == pytest.approx(0.2041, abs=1e-4)
    assert c["moved"][0]["case_id"] == "beta" and c["moved"][0]["diff"] == pytest.approx(1.0)


def test_trend_spending_training(served: Served) -> None:
    trend = get(served, "/api/machines/shout/trend").json()
    assert len(trend["points"]) == 11 and trend["choices"]["versions"] == ["v1", "v2"]
    assert trend["choices"]["cases"] == ["alpha", "beta", "delta", "gamma"]
    spending = get(served, "/api/spending").json()
    assert spending["total_usd"] == 0.25 and spending["entries"][0]["tool"] == "suite"
    assert get(served, "/api/training").json() == []


def test_events_tell_of_runs_as_they_go_and_of_runs_stored_elsewhere(root: Path, served: Served) -> None:
    log = EventLog(root / ".machine" / EVENTS_FILE)
    seen: list[dict[str, object]] = []
    with httpx.stream("GET", served.url + "api/events", timeout=LIMIT_S) as stream:
        lines = stream.iter_lines()
        assert next(lines) == ": connected"
        log.emit("run_started", run="live-1", machine="shout", model="echo", input="hello", case_id=None)
        log.emit("step", run="live-1", machine="shout", type="assistant", text="HELLO", tool=None)
        running = _until(lambda: get(served, "/api/running").json(), lambda r: bool(r and r[0]["steps"]))
        assert running[0]["run"] == "live-1" and running[0]["steps"][0]["text"] == "HELLO"
        store = SQLiteStore.in_workspace(root)
        store.put(stored_run(40, case_id="alpha"))  # another process stores a run
        store.close()
        log.emit("run_finished", run="live-1", machine="shout", status="ok", score=None, output="HELLO")
        deadline = time.monotonic() + LIMIT_S
        for line in lines:
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
            if {"run_finished", "store"} <= {e["kind"] for e in seen} or time.monotonic() > deadline:
                break
    assert [e["kind"] for e in seen if e["kind"] != "store"] == ["run_started", "step", "run_finished"]
    assert any(e["kind"] == "store" for e in seen)
    assert _until(lambda: get(served, "/api/running").json(), lambda r: r == []) == []
    log.close()


def _until(read, done):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + LIMIT_S
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_another_host_or_origin_is_refused(served: Served) -> None:
    assert get(served, "/api/machines", host="evil.example").status_code == 421
    assert get(served, "/api/machines", origin="http://evil.example").status_code == 403
    assert get(served, "/api/machines", origin="http://localhost:1234").status_code == 403  # another port
    assert get(served, "/api/machines", origin=served.url.rstrip("/")).status_code == 200


def test_off_loopback_every_request_needs_the_token(root: Path) -> None:
    """Listening on every address (reached here on loopback only): no token, a wrong one: 401; the bearer
    header, or the cookie a visit with ?token= leaves, opens it; the chosen token is never printed."""
    with dashboard(root, "--host", "0.0.0.0", env={"MACHINE_DASHBOARD_TOKEN": TOKEN}) as open_to_all:
        url = open_to_all.url.replace("0.0.0.0", "127.0.0.1")
        assert httpx.get(url + "api/machines", timeout=LIMIT_S).status_code == 401
        wrong = {"authorization": "Bearer " + TOKEN[:-1] + "x"}
        assert httpx.get(url + "api/machines", headers=wrong, timeout=LIMIT_S).status_code == 401
        right = {"authorization": f"Bearer {TOKEN}"}
        assert httpx.get(url + "api/machines", headers=right, timeout=LIMIT_S).status_code == 200
        visit = httpx.get(url + f"?token={TOKEN}", timeout=LIMIT_S)
        assert visit.status_code == 303 and visit.headers["location"] == "/"
        assert "HttpOnly" in visit.headers["set-cookie"] and "SameSite=Strict" in visit.headers["set-cookie"]
        with httpx.Client(cookies=visit.cookies, timeout=LIMIT_S) as browser:
            assert browser.get(url + "api/machines").status_code == 200
        assert "warning: listening on 0.0.0.0" in open_to_all.head
        assert TOKEN not in open_to_all.head


def test_a_port_in_use_is_refused_in_words(root: Path, served: Served) -> None:
    port = served.url.rsplit(":", 1)[1].strip("/")
    done = subprocess.run(
        [str(MACHINE_BIN), "dashboard", "--port", port, "--workspace", str(root)],
        capture_output=True, text=True, timeout=60, env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"127.0.0.1:{port} is already in use" in done.stderr and "--port" in done.stderr


def test_ctrl_c_stops_it_with_a_page_listening(root: Path) -> None:
    """An event stream a page holds open never ends by itself; Ctrl-C still stops the server at once."""
    with (
        dashboard(root) as running,
        httpx.stream("GET", running.url + "api/events", timeout=LIMIT_S) as stream,
    ):
        assert next(stream.iter_lines()) == ": connected"
        running.process.send_signal(signal.SIGINT)
        code = running.process.wait(timeout=LIMIT_S)
    assert code in (0, 130), code


def test_the_spending_total_counts_a_sessions_tool_calls_once(tmp_path: Path) -> None:
    """A session's tool calls each have a line ``within`` the session's own, which holds their spending:
    the total counts them there, and on their own only while the session's line is not written yet."""
    from machine import open_workspace
    from machine.dashboard._api import Api

    ws = open_workspace(tmp_path)
    (tmp_path / ".machine").mkdir()
    lines = [
        {"correlation_id": "spend-t1", "tool": "rehearse", "spent_usd": 0.3, "within": "spend-s"},
        {"correlation_id": "spend-t2", "tool": "rehearse", "spent_usd": 0.1, "within": "spend-s"},
        {"correlation_id": "spend-s", "tool": "machinist", "spent_usd": 0.45},
        {"correlation_id": "spend-t3", "tool": "rehearse", "spent_usd": 0.2, "within": "spend-open"},
    ]
    log = tmp_path / ".machine" / "spending.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    spending = Api(ws, None).spending({})  # type: ignore[arg-type]  # the follower plays no part here
    assert len(spending["entries"]) == 4 and spending["total_usd"] == pytest.approx(0.65)
