"""web_fetch keeps to its limits whatever a server sends: a stacked-gzip bomb is cut at the byte cap
on the decoded bytes, and deeply nested HTML turns into text in time and size linear in the page, off
the event loop. A local server on 127.0.0.1 serves each hostile body built here."""

from __future__ import annotations

import gzip
import ipaddress
import socketserver
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from helpers.loop import loop_gaps
from helpers.quiet_server import QuietServer

from machine import ToolContext
from machine.sandboxes.tools import FetchError, IPAddress, fetch, html_to_text, make_web_fetch

MAX_GAP_S = 0.2
BOMB_BYTES = 256 * 1024 * 1024
LOOPBACK = ipaddress.ip_address("127.0.0.1")


def _gzip_stream(chunks: Iterator[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(packer.compress(c) for c in chunks) + packer.flush()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """256 MiB of text, gzipped three times over: a few kilobytes on the wire."""
    layer = _gzip_stream(b"a" * (1 << 20) for _ in range(BOMB_BYTES >> 20))
    for _ in range(2):
        layer = gzip.compress(layer, 9)
    assert len(layer) < 20_000
    return layer


class _Server(QuietServer):
    def server_bind(self) -> None:  # no name lookup (getfqdn)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[_Server] = []

    def start(routes: dict[str, tuple[dict[str, str], bytes]]) -> int:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                headers, body = routes[self.path]
                self.send_response(200)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        started.append(httpd)
        return int(httpd.server_address[1])

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def loopback(port: int) -> Any:
    def allow(address: IPAddress, p: int) -> bool:
        return address == LOOPBACK and p == port

    return allow


async def test_a_stacked_gzip_bomb_is_cut_at_the_cap_on_decoded_bytes(serve: Any, bomb: bytes) -> None:
    headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip, gzip"}
    port = serve({"/bomb": (headers, bomb)})
    tracemalloc.start()
    try:
        async with loop_gaps() as gaps:
            page = await fetch(f"http://127.0.0.1:{port}/bomb", allow=loopback(port), max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert page.cut
    assert page.text == "a" * 1_000_000
    assert peak < 8_000_000, f"peak {peak:,} bytes for a 1,000,000-byte cap"
    assert gaps.longest < MAX_GAP_S


async def test_the_tool_names_the_limit_a_bomb_hit(serve: Any, bomb: bytes) -> None:
    port = serve({"/bomb": ({"Content-Type": "text/plain", "Content-Encoding": "gzip,gzip,gzip"}, bomb)})
    tool = make_web_fetch(allow=loopback(port))
    result = await tool.invoke({"url": f"http://127.0.0.1:{port}/bomb"}, ToolContext(run_id="r1"))
    assert "Characters 0-20,000 of 5,000,000 (text/plain)" in result
    assert result.endswith("[the page is larger than 5,000,000 bytes: only its start was read]")


async def test_a_raw_body_over_the_cap_is_cut_and_odd_encodings_refused(serve: Any) -> None:
    body = zlib.compress(b"x" * 5000)  # deflate with its zlib header
    raw_deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    bare = raw_deflate.compress(b"y" * 5000) + raw_deflate.flush()
    port = serve(
        {
            "/big": ({"Content-Type": "text/plain"}, b"z" * 300_000),
            "/deflate": ({"Content-Type": "text/plain", "Content-Encoding": "deflate"}, body),
            "/bare": ({"Content-Type": "text/plain", "Content-Encoding": "deflate"}, bare),
            "/br": ({"Content-Type": "text/plain", "Content-Encoding": "br"}, b"\x0b\x01\x80"),
            "/deep": ({"Content-Type": "text/plain", "Content-Encoding": ", ".join(["gzip"] * 5)}, b""),
            "/broken": ({"Content-Type": "text/plain", "Content-Encoding": "gzip"}, b"\x1f\x8bnot gzip"),
        }
    )
    allow, url = loopback(port), f"http://127.0.0.1:{port}"
    page = await fetch(url + "/big", allow=allow, max_bytes=100_000)
    assert page.cut and page.text == "z" * 100_000
    assert (await fetch(url + "/deflate", allow=allow)).text == "x" * 5000
    assert (await fetch(url + "/bare", allow=allow)).text == "y" * 5000
    with pytest.raises(FetchError, match="content encoding 'br'"):
        await fetch(url + "/br", allow=allow)
    with pytest.raises(FetchError, match="encoded 5 times over"):
        await fetch(url + "/deep", allow=allow)
    with pytest.raises(FetchError, match="gzip encoding is damaged"):
        await fetch(url + "/broken", allow=allow)


def _nested(depth: int) -> str:
    links = "".join(f"<a href='/l{i}'>x" for i in range(depth)) + "</a>" * depth
    lists = "<ul><li>item" * depth + "</li></ul>" * depth
    return f"<html><body>{links}{lists}</body></html>"


def test_nested_links_and_lists_give_text_linear_in_the_page() -> None:
    page = _nested(5000)
    _, text = html_to_text(page, base="http://example.test/")
    assert len(text) < 3 * len(page), f"{len(text):,} characters of text from {len(page):,} of HTML"
    assert text.startswith("[x](http://example.test/l0)[x](http://example.test/l1)")
    assert "\n" + "  " * 8 + "- item" in text
    assert "  " * 9 + "- item" not in text


async def test_html_is_turned_into_text_off_the_event_loop(serve: Any) -> None:
    page = _nested(20_000).encode()
    port = serve({"/nested": ({"Content-Type": "text/html"}, page)})
    async with loop_gaps() as gaps:
        result = await fetch(f"http://127.0.0.1:{port}/nested", allow=loopback(port))
    assert len(result.text) < 3 * len(page)
    assert gaps.longest < MAX_GAP_S, f"the event loop was held {gaps.longest * 1000:.0f} ms"
