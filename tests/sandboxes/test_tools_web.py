"""web_fetch: the address policy, checked where the connection is made and on every redirect.

No test here sends a packet anywhere but 127.0.0.0/8: addresses outside loopback are tested on the
check function alone, names are resolved only by injected resolvers (or refused before any lookup),
and the servers are local ones started by the tests.
"""

from __future__ import annotations

import ipaddress
import shutil
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from helpers.env import on_ci
from helpers.quiet_server import QuietServer

from machine import ToolContext, ToolFailure
from machine.sandboxes.tools import (
    FetchError,
    FetchRefused,
    IPAddress,
    Policy,
    fetch,
    is_public_address,
    make_web_fetch,
    public_only,
    web_fetch,
)
from machine.sandboxes.tools.web import FETCH_CHARS

CTX = ToolContext(run_id="r1")
LOOPBACK = ipaddress.ip_address("127.0.0.1")

Reply = tuple[int, dict[str, str], bytes]


@dataclass
class Server:
    """A local HTTP server on 127.0.0.1 that records every request it gets."""

    routes: dict[str, Reply | Callable[[], Reply]]
    hits: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0

    scheme: str = "http"

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.hits.append((self.path, self.headers.get("Host", "")))
            route = server.routes.get(self.path, (404, {"Content-Type": "text/plain"}, b"not here"))
            status, headers, body = route() if callable(route) else route
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _LocalServer(QuietServer):
    def server_bind(self) -> None:  # HTTPServer's own looks its name up (getfqdn): not wanted here
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Any]], Server]]:
    started: list[_LocalServer] = []

    def start(routes: dict[str, Any], tls: ssl.SSLContext | None = None) -> Server:
        server = Server(routes, scheme="https" if tls else "http")
        httpd = _LocalServer(("127.0.0.1", 0), _handler(server))
        if tls is not None:
            httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
        server.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        started.append(httpd)
        return server

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def only(server: Server) -> Policy:
    """The test's exception: 127.0.0.1 at this one server's port; everything else by the real policy."""

    def allow(address: IPAddress, port: int) -> bool:
        return (address == LOOPBACK and port == server.port) or public_only(address, port)

    return allow


def resolver(table: dict[str, list[str]], calls: list[str] | None = None) -> Callable[[str], Any]:
    async def resolve(host: str) -> list[str]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError(f"test resolver: no entry for {host}")
        return table[host]

    return resolve


def html(body: str, title: str = "A page") -> Reply:
    page = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()


# ------------------------------------------------------------------------------ the packet guard

_GUARD: dict[str, Any] = {"on": False, "seen": []}


def _is_loopback(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Records every connection or name lookup that could leave the machine's loopback."""
    if not _GUARD["on"]:
        return
    if event in ("socket.connect", "socket.sendto") and isinstance(args[1], tuple):
        if not _is_loopback(args[1][0]):
            _GUARD["seen"].append((event, args[1]))
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr") and not _is_loopback(
        args[0]
    ):
        _GUARD["seen"].append((event, args[0]))


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def no_packet_leaves_loopback() -> Iterator[None]:
    """Fails a test that connected, sent or looked a name up anywhere but 127.0.0.0/8 and ::1."""
    _GUARD["seen"] = []
    _GUARD["on"] = True
    try:
        yield
    finally:
        _GUARD["on"] = False
    assert _GUARD["seen"] == [], f"traffic outside loopback: {_GUARD['seen']}"


# ------------------------------------------------------------------------------ the address policy


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",
        "100.64.0.1",
        "224.0.0.1",
        "239.255.255.250",
        "0.0.0.0",
        "255.255.255.255",
        "240.0.0.1",
        "192.0.2.1",
        "198.18.0.1",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "fe80::1%eth0",
        "ff02::1",
        "2001:db8::1",  # documentation: never a real server
        "2001::1",  # Teredo
        "2002:7f00:1::1",  # 6to4 around 127.0.0.1
        "2002:5db8:d822::1",  # 6to4 around a public address: refused too, a tunnel to an IPv4 host
        "not an address",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert is_public_address(address) is False


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public_address(address) is True
    assert public_only(ipaddress.ip_address(address), 443) is True


# ------------------------------------------------------------------------------ refusals, no request


async def test_the_tool_refuses_loopback_before_connecting(serve: Callable[..., Server]) -> None:
    server = serve({"/": html("<p>private</p>")})
    for url in (server.url("/"), server.url("/", host="localhost"), f"http://[::1]:{server.port}/"):
        with pytest.raises(ToolFailure) as caught:
            await web_fetch.invoke({"url": url}, CTX)
        assert "public sites only" in str(caught.value), url
    for url in ("http://127.0.0.1/", "http://localhost/", "http://[::1]/", "http://LOCALHOST./x"):
        with pytest.raises(ToolFailure, match="public sites only"):
            await web_fetch.invoke({"url": url}, CTX)
    assert server.hits == []


@pytest.mark.parametrize(
    "url",
    [
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://printer.local/",
        "http://intranet/",
        "http://router.home.arpa/",
        "http://app.localhost:8080/",
    ],
)
async def test_internal_names_are_refused_without_a_lookup(url: str) -> None:
    calls: list[str] = []
    with pytest.raises(FetchRefused, match="internal name"):
        await fetch(url, resolve=resolver({}, calls))
    assert calls == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "data:,x"]
)
async def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(ToolFailure, match="http and https"):
        await web_fetch.invoke({"url": url}, CTX)


async def test_a_name_that_resolves_to_loopback_is_refused(serve: Callable[..., Server]) -> None:
    server = serve({"/": html("<p>private</p>")})
    tool = make_web_fetch(resolve=resolver({"sneaky.example.test": ["127.0.0.1"]}))
    with pytest.raises(ToolFailure) as caught:
        await tool.invoke({"url": server.url("/", host="sneaky.example.test")}, CTX)
    assert "127.0.0.1 (sneaky.example.test resolves to it)" in str(caught.value)
    assert server.hits == []


async def test_every_resolved_address_must_pass(serve: Callable[..., Server]) -> None:
    """One allowed and one refused address: refused, rather than connecting to the allowed one."""
    server = serve({"/": html("<p>hello</p>")})
    resolve = resolver({"mixed.example.test": ["127.0.0.1", "127.0.0.2"]})
    with pytest.raises(FetchRefused, match=r"127\.0\.0\.2"):
        await fetch(server.url("/", host="mixed.example.test"), resolve=resolve, allow=only(server))
    assert server.hits == []


# ------------------------------------------------------------------------------ redirects


async def test_a_redirect_to_loopback_is_refused(serve: Callable[..., Server]) -> None:
    inside = serve({"/secret": html("<p>the secret</p>")})
    site = serve({"/go": (302, {"Location": inside.url("/secret")}, b"")})
    resolve = resolver({"public.example.test": ["127.0.0.1"]})
    tool = make_web_fetch(resolve=resolve, allow=only(site))
    with pytest.raises(ToolFailure) as caught:
        await tool.invoke({"url": site.url("/go", host="public.example.test")}, CTX)
    assert "127.0.0.1 is a private, loopback" in str(caught.value)
    assert [path for path, _ in site.hits] == ["/go"]
    assert inside.hits == []


@pytest.mark.parametrize(
    "location",
    [
        "http://localhost:{port}/page",  # the allowed port, but an internal name
        "http://inner.example.test:{port}/page",  # resolves to 127.0.0.2, which the policy refuses
        "http://[::1]:{port}/page",
        "http://[::ffff:127.0.0.1]:{port}/page",
        "file:///etc/passwd",
    ],
)
async def test_redirect_targets_are_checked_like_the_first_url(
    serve: Callable[..., Server], location: str
) -> None:
    site = serve({"/page": html("<p>page</p>")})
    site.routes["/go"] = (301, {"Location": location.format(port=site.port)}, b"")
    resolve = resolver({"public.example.test": ["127.0.0.1"], "inner.example.test": ["127.0.0.2"]})
    with pytest.raises(FetchRefused):
        await fetch(site.url("/go", host="public.example.test"), resolve=resolve, allow=only(site))
    assert [path for path, _ in site.hits] == ["/go"]


async def test_redirects_are_followed_and_bounded(serve: Callable[..., Server]) -> None:
    site = serve({"/final": html("<h1>Arrived</h1>")})
    site.routes["/start"] = (302, {"Location": "/middle"}, b"")
    site.routes["/middle"] = (307, {"Location": site.url("/final")}, b"")
    site.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    page = await fetch(site.url("/start"), allow=only(site))
    assert page.final_url == site.url("/final")
    assert page.redirects == (site.url("/start"), site.url("/middle"))
    assert page.text == "# Arrived"
    site.hits.clear()
    with pytest.raises(FetchError, match="redirected more than 5 times"):
        await fetch(site.url("/loop"), allow=only(site))
    assert len(site.hits) == 6


# ------------------------------------------------------------------------------ fetching


LONG_PAGE = (
    "<style>body { color: red } .STYLE_MARK {}</style>"
    "<script>var SCRIPT_MARK = '<p>not text</p>';</script>"
    "<noscript>NOSCRIPT_MARK</noscript>"
    "<h1>Main title</h1><p>Intro with <a href='/docs/next'>the next page</a> and"
    " <a href='https://other.example/x'>elsewhere</a>.</p>"
    "<h2>Body</h2>"
    + "".join(f"<p>Paragraph {i:03} {'lorem ipsum ' * 20}</p>" for i in range(200))
    + "<p>THE END</p>"
)


async def test_a_page_comes_as_text_without_scripts_or_styles(serve: Callable[..., Server]) -> None:
    calls: list[str] = []
    site = serve({"/page": html(LONG_PAGE, title="Long &amp; useful")})
    resolve = resolver({"docs.example.test": ["127.0.0.1"]}, calls)
    page = await fetch(site.url("/page", host="docs.example.test"), resolve=resolve, allow=only(site))
    assert calls == ["docs.example.test"]  # resolved once, then connected to that address
    assert site.hits == [("/page", f"docs.example.test:{site.port}")]  # the Host header is the name
    assert page.final_url == site.url("/page", host="docs.example.test")
    assert page.title == "Long & useful"
    assert page.status == 200
    assert page.content_type == "text/html"
    for mark in ("STYLE_MARK", "SCRIPT_MARK", "NOSCRIPT_MARK", "not text", "<p>", "color: red"):
        assert mark not in page.text
    assert page.text.startswith("# Main title\n\nIntro with [the next page]")
    assert f"[the next page](http://docs.example.test:{site.port}/docs/next)" in page.text
    assert "[elsewhere](https://other.example/x)" in page.text
    assert "\n## Body\n" in page.text
    assert page.text.endswith("THE END")


async def test_the_tool_pages_with_offset(serve: Callable[..., Server]) -> None:
    site = serve({"/page": html(LONG_PAGE)})
    tool = make_web_fetch(allow=only(site))
    page = await fetch(site.url("/page"), allow=only(site))
    total = len(page.text)
    assert total > 2 * FETCH_CHARS

    pieces, offset = [], 0
    for _ in range(10):  # bounded: the page needs 3 calls
        result = await tool.invoke({"url": site.url("/page"), "offset": offset}, CTX)
        header, _, rest = result.partition("\n\n")
        assert header.startswith(f"URL: {site.url('/page')}\nStatus: 200\nTitle: A page\n")
        end = min(offset + FETCH_CHARS, total)
        assert f"Characters {offset:,}-{end:,} of {total:,}" in header
        if end < total:
            text, _, note = rest.rpartition("\n\n")
            assert note == f"[{total - end:,} more characters: call web_fetch with offset={end} to read on]"
            pieces.append(text)
            offset = end
        else:
            pieces.append(rest)
            break
    assert "".join(pieces) == page.text
    assert len(pieces) == 3
    with pytest.raises(ToolFailure, match="past the end"):
        await tool.invoke({"url": site.url("/page"), "offset": total + 5}, CTX)
    with pytest.raises(ToolFailure, match="0 or more"):
        await tool.invoke({"url": site.url("/page"), "offset": -1}, CTX)


async def test_text_types_as_they_are_and_binary_refused(serve: Callable[..., Server]) -> None:
    site = serve(
        {
            "/notes.txt": (200, {"Content-Type": "text/plain"}, b"<b>plain</b> text\n"),
            "/data.json": (200, {"Content-Type": "application/json"}, b'{"a": 1}'),
            "/image.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\x00\x00"),
            "/blob": (200, {"Content-Type": "application/octet-stream"}, b"\x00\x01\x02"),
            "/missing": (404, {"Content-Type": "text/html"}, b"<h1>Not found</h1>"),
            "/latin": (200, {"Content-Type": "text/plain; charset=latin-1"}, "café".encode("latin-1")),
        }
    )
    allow = only(site)
    assert (await fetch(site.url("/notes.txt"), allow=allow)).text == "<b>plain</b> text\n"
    assert (await fetch(site.url("/data.json"), allow=allow)).text == '{"a": 1}'
    assert (await fetch(site.url("/latin"), allow=allow)).text == "café"
    for path in ("/image.png", "/blob"):
        with pytest.raises(FetchError, match="HTML and text pages only"):
            await fetch(site.url(path), allow=allow)
    missing = await make_web_fetch(allow=allow).invoke({"url": site.url("/missing")}, CTX)
    assert "Status: 404" in missing
    assert "# Not found" in missing


async def test_environment_proxies_are_ignored(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = serve({})
    site = serve({"/": html("<p>direct</p>")})
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, proxy.url(""))
    page = await fetch(site.url("/"), allow=only(site))
    assert page.text == "direct"
    assert proxy.hits == []


async def test_a_slow_server_times_out(serve: Callable[..., Server]) -> None:
    def slow() -> Reply:
        time.sleep(2)
        return html("<p>late</p>")

    site = serve({"/slow": slow})
    started = time.monotonic()
    with pytest.raises(FetchError, match="timed out"):
        await fetch(site.url("/slow"), allow=only(site), timeout_s=0.3)
    assert time.monotonic() - started < 1.5


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for secure.example.test only (not for 127.0.0.1)."""
    if shutil.which("openssl") is None:  # never silently under CI, where the image has it
        message = "the openssl command is needed to make a test certificate"
        if on_ci():
            pytest.fail(message)
        pytest.skip(message)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=secure.example.test"),
            *("-addext", "subjectAltName=DNS:secure.example.test"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


async def test_https_to_the_pinned_address_keeps_the_name_for_sni_and_certificate(
    serve: Callable[..., Server], certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connected to 127.0.0.1, yet the certificate is checked against the host name (SNI and
    hostname verification use the name), so a name the certificate does not cover fails."""
    cert, key = certificate
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    site = serve({"/": html("<p>over tls</p>")}, tls=tls)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust the test certificate (httpx reads it)
    resolve = resolver({"secure.example.test": ["127.0.0.1"], "wrong.example.test": ["127.0.0.1"]})
    page = await fetch(site.url("/", host="secure.example.test"), resolve=resolve, allow=only(site))
    assert page.text == "over tls"
    assert page.final_url == f"https://secure.example.test:{site.port}/"
    assert site.hits == [("/", f"secure.example.test:{site.port}")]
    with pytest.raises(FetchError, match=r"not valid for 'wrong\.example\.test'"):
        await fetch(site.url("/", host="wrong.example.test"), resolve=resolve, allow=only(site))
    assert len(site.hits) == 1


async def test_an_unresolvable_name_is_a_clear_error() -> None:
    with pytest.raises(FetchError, match=r"could not resolve nowhere\.example\.test"):
        await fetch("http://nowhere.example.test/", resolve=resolver({}))


def test_the_tool_describes_itself() -> None:
    assert web_fetch.name == "web_fetch"
    assert web_fetch.parameters["required"] == ["url"]
    assert "20,000 characters" in web_fetch.description
