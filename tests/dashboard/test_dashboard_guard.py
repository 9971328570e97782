"""What ``machine dashboard`` (a real process, reached on loopback only) refuses and bounds: a dashboard
bound to another loopback address answers its own URL; crafted Host and Origin headers are refused
(400 malformed, 421 another host, 403 another origin), sent byte for byte; the ``?token=`` visit
redirects only onto the dashboard's own origin; event streams past the cap are answered 503 with
Retry-After, and a stream closed frees its slot. Every wait is bounded."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from helpers.dashboard import Served, dashboard, raw_get
from helpers.env import MACHINE_BIN, REPO, clean_env

from machine.dashboard import MAX_STREAMS

pytestmark = pytest.mark.slow
TOKEN = "g" * 20 + "-a-dashboard-token-of-44-chars"
LIMIT_S = 10.0
STREAMS_ENV = "MACHINE_DASHBOARD_STREAMS"
CAP = 2
"""The cap the stream test sets through ``MACHINE_DASHBOARD_STREAMS``, so it opens a few streams, not 33."""


def port(served: Served) -> int:
    found = urlsplit(served.url).port
    assert found is not None
    return found


def test_a_dashboard_bound_to_another_loopback_address_answers_its_own_url(root: Path) -> None:
    with dashboard(root, "--host", "127.0.0.2") as other:
        assert other.url.startswith("http://127.0.0.2:"), other.url
        origin = other.url.rstrip("/")
        assert httpx.get(other.url, timeout=LIMIT_S).status_code == 200
        machines = httpx.get(other.url + "api/machines", headers={"origin": origin}, timeout=LIMIT_S)
        assert machines.status_code == 200 and machines.json()[0]["name"] == "shout"
        with httpx.stream("GET", other.url + "api/events", timeout=LIMIT_S) as stream:
            assert stream.status_code == 200 and next(stream.iter_lines()) == ": connected"
        assert raw_get(other.url, "/api/machines", [("Host", "127.0.0.2.evil.com")]).status == 421
        assert "warning" not in other.head  # loopback: no token, nothing exposed


HOSTS = [
    ("127.0.0.1:1@evil.com", 400),
    ("evil.com@127.0.0.1", 400),
    ("user@localhost:{port}", 400),
    ("127.0.0.1.evil.com", 421),
    ("127.0.0.1.evil.com:{port}", 421),
    ("localhost.evil.com", 421),
    ("evil.com#127.0.0.1", 400),
    ("127.0.0.1:{port}x", 400),
    ("127.0.0.1:{port}/x", 400),
    ("127.0.0.1 evil.com", 400),
    ("127.0.0.1:", 400),
    ("127.0.0.1:0", 400),
    ("127.0.0.1:65536", 400),
    ("127.0.0.1:+80", 400),
    ("::1", 400),
    ("::1:{port}", 400),
    ("[::1", 400),
    ("[::1]x", 400),
    ("[::1]:{port}:1", 400),
    ("[127.0.0.1]", 400),
    ("[fe80::1%25lo]", 400),
    ("[evil.com]", 400),
    ("localhost.", 400),
    ("2130706433", 421),
    ("127.1", 421),
    ("0x7f.0.0.1", 421),
    ("", 400),
]


@pytest.mark.parametrize(("host", "status"), HOSTS)
def test_a_crafted_host_is_refused(served: Served, host: str, status: int) -> None:
    answer = raw_get(served.url, "/api/machines", [("Host", host.format(port=port(served)))])
    assert answer.status == status, (host, answer)


def test_no_host_or_two_are_refused(served: Served) -> None:
    own = f"127.0.0.1:{port(served)}"
    assert raw_get(served.url, "/api/machines", [("Host", own), ("Host", "evil.com")]).status == 400
    assert raw_get(served.url, "/api/machines", [("Host", own), ("Host", own)]).status == 400
    assert raw_get(served.url, "/api/machines", []).status == 400


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "LocalHost:{port}",
        "[::1]:{port}",
        "[0:0:0:0:0:0:0:1]:{port}",
        "127.0.0.5:{port}",
        "127.0.0.1",
        "[::1]",
    ],
)
def test_each_loopback_name_is_served(served: Served, host: str) -> None:
    assert raw_get(served.url, "/api/machines", [("Host", host.format(port=port(served)))]).status == 200


ORIGINS = [
    "http://evil.example",
    "http://127.0.0.1:1@evil.com",
    "http://evil.com@127.0.0.1:{port}",
    "http://user@127.0.0.1:{port}",
    "http://127.0.0.1.evil.com:{port}",
    "http://localhost.evil.com:{port}",
    "http://127.0.0.1:{port}/",
    "http://127.0.0.1:{port}/x",
    "http://127.0.0.1:{port}?x",
    "http://127.0.0.1:{port} evil",
    "http://127.0.0.1:1234",
    "http://localhost:{port}",
    "http://127.0.0.1",
    "http://::1:{port}",
    "http://[::1",
    "ftp://127.0.0.1:{port}",
    "file://",
    "null",
    "",
    "127.0.0.1:{port}",
]


@pytest.mark.parametrize("origin", ORIGINS)
def test_another_origin_or_a_crafted_one_is_refused(served: Served, origin: str) -> None:
    own = f"127.0.0.1:{port(served)}"
    headers = [("Host", own), ("Origin", origin.format(port=port(served)))]
    assert raw_get(served.url, "/api/machines", headers).status == 403, origin


def test_the_dashboards_own_origin_is_served_and_only_once(served: Served) -> None:
    for host, origin in [
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}"),
        ("[::1]:{port}", "http://[::1]:{port}"),
    ]:
        headers = [("Host", host.format(port=port(served))), ("Origin", origin.format(port=port(served)))]
        assert raw_get(served.url, "/api/machines", headers).status == 200, origin
    twice = [("Host", f"127.0.0.1:{port(served)}"), *[("Origin", f"http://127.0.0.1:{port(served)}")] * 2]
    assert raw_get(served.url, "/api/machines", twice).status == 403


CRAFTED_TARGETS = [
    "//evil.com/?token={token}",
    "//evil.com?token={token}",
    "///evil.com/?token={token}",
    "/\\evil.com/?token={token}",
    "/\\/evil.com/?token={token}",
    "/%2F%2Fevil.com/?token={token}",
    "/%5C%5Cevil.com/?token={token}",
    "/%09/evil.com?token={token}",
    "/%0d%0aLocation:%20http://evil.com?token={token}",
    "/?token={token}&next=http://evil.com",
    "/?next=//evil.com&token={token}",
    "/http://evil.com?token={token}",
]


def test_the_token_visit_stays_on_the_dashboards_origin(root: Path) -> None:
    """Listening on every address (reached on loopback only), a ``?token=`` visit under any crafted path
    or parameter redirects to a path of this dashboard, never to another site."""
    with dashboard(root, "--host", "0.0.0.0", env={"MACHINE_DASHBOARD_TOKEN": TOKEN}) as open_to_all:
        url = open_to_all.url.replace("0.0.0.0", "127.0.0.1")
        own = urlsplit(url)
        for target in CRAFTED_TARGETS:
            answer = raw_get(url, target.format(token=TOKEN), [("Host", own.netloc)])
            location = answer.headers.get("location", "")
            assert answer.status == 303, (target, answer)
            assert location.startswith("/") and location[1:2] not in ("/", "\\"), (target, location)
            assert location.isprintable() and " " not in location, (target, location)
            landed = urlsplit(urljoin(url, location))
            assert (landed.scheme, landed.netloc) == (own.scheme, own.netloc), (target, location)
            assert TOKEN not in location
        plain = raw_get(url, f"/?token={TOKEN}&limit=3", [("Host", own.netloc)])
        assert plain.headers["location"] == "/?limit=3"


def test_event_streams_past_the_cap_wait_their_turn(root: Path) -> None:
    """With the cap at ``CAP`` (``MACHINE_DASHBOARD_STREAMS``): one more stream is 503 with Retry-After
    while the pages still answer; closing one frees its slot for the next."""
    with dashboard(root, env={STREAMS_ENV: str(CAP)}) as capped, ExitStack() as streams:
        events = capped.url + "api/events"

        def hold() -> tuple[httpx.Response, Iterator[str] | None]:
            """A stream held open, with its lines (a dropped line iterator would close it)."""
            stream = streams.enter_context(httpx.stream("GET", events, timeout=LIMIT_S))
            if stream.status_code != 200:
                return stream, None
            lines = stream.iter_lines()
            assert next(lines) == ": connected"
            return stream, lines

        held = [hold() for _ in range(CAP)]
        assert all(lines is not None for _, lines in held)
        extra = httpx.get(events, timeout=LIMIT_S)
        assert extra.status_code == 503 and int(extra.headers["retry-after"]) > 0
        assert "event streams" in extra.json()["error"]
        assert httpx.get(capped.url + "api/machines", timeout=LIMIT_S).status_code == 200
        held[0][0].close()
        deadline = time.monotonic() + LIMIT_S
        while (again := hold())[1] is None:
            assert again[0].status_code == 503 and time.monotonic() < deadline, "no slot was freed"
            time.sleep(0.05)
        assert httpx.get(events, timeout=LIMIT_S).status_code == 503  # the freed slot is taken again


def test_a_cap_that_is_not_a_number_is_refused_in_words(root: Path) -> None:
    done = subprocess.run(
        [str(MACHINE_BIN), "dashboard", "--port", "0", "--workspace", str(root)],
        capture_output=True, text=True, timeout=60, env=clean_env({STREAMS_ENV: "0"}),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{STREAMS_ENV} must be a whole number from 1" in done.stderr and "not '0'" in done.stderr


def test_the_documented_cap_is_the_cap() -> None:
    page = (REPO / "docs" / "dashboard.md").read_text(encoding="utf-8")
    assert f"At most {MAX_STREAMS} streams are open at once" in page and STREAMS_ENV in page
