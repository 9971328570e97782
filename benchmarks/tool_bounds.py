"""Each standard tool on the worst input built here, side by side with its bounds: the longest the
event loop went without running a 5 ms ticker while the tool ran (target: at most 50 ms), and the
tool's peak memory (tracemalloc, a second pass, so the tracing does not slow the first) against the
limit it is given. Loopback only: web_fetch reads from a local server on 127.0.0.1.

- search_files: an exponential regular expression (``(x+x+)+y`` on 40 x's) and an exponential glob,
  with the time limit set to 2 s; the figure beside is how long the call took to stop.
- read_file: a sparse 1 GiB file of one line (costs no disk), from the start and with an offset.
- edit_file: the same 1 GiB file (refused before reading), and a 4 MB file where the snippet is
  everywhere.
- list_files: a folder of 50,000 entries (20,000 with ``--quick``).
- web_fetch: 1 GiB of text gzipped three times (256 MiB with ``--quick``), and HTML of 20,000 nested
  links then 20,000 nested lists.

Prints figures and asserts nothing. ``.venv/bin/python benchmarks/tool_bounds.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import sys
import tempfile
import threading
import time
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.loop import loop_gaps

from machine import ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox
from machine.sandboxes.tools import _search, edit_file, list_files, make_web_fetch, read_file, search_files
from machine.sandboxes.tools.files import MAX_EDIT_BYTES, MAX_READ_CHARS
from machine.sandboxes.tools.web import FETCH_MAX_BYTES

TARGET_BLOCK_MS = 50.0
GIB = 1 << 30


def _serve(routes: dict[str, tuple[dict[str, str], bytes]]) -> tuple[int, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            headers, body = routes[self.path]
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # web_fetch stops reading at its cap
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return int(httpd.server_address[1]), httpd


def _bomb(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    layer = b"".join(packer.compress(b"a" * (1 << 20)) for _ in range(size >> 20)) + packer.flush()
    return gzip.compress(gzip.compress(layer, 9), 9)


def _nested(depth: int) -> bytes:
    links = "".join(f"<a href='/l{i}'>x" for i in range(depth)) + "</a>" * depth
    lists = "<ul><li>item" * depth + "</li></ul>" * depth
    return f"<html><body>{links}{lists}</body></html>".encode()


async def _quiet(call: Callable[[], Awaitable[str]]) -> str:
    try:
        return await call()
    except ToolFailure as failure:
        return f"ToolFailure: {failure}"


async def _measure(call: Callable[[], Awaitable[str]]) -> tuple[float, float, int, str]:
    started = time.monotonic()
    async with loop_gaps() as gaps:
        result = await _quiet(call)
    took = time.monotonic() - started
    tracemalloc.start()
    try:
        await _quiet(call)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return gaps.longest * 1000, took, peak, result


def _cases(box: LocalSandbox, port: int) -> list[tuple[str, int, Callable[[], Awaitable[str]]]]:
    ctx = ToolContext(run_id="bench", sandbox=box)
    web = make_web_fetch(allow=lambda address, p: str(address) == "127.0.0.1" and p == port)
    url = f"http://127.0.0.1:{port}"

    def tool(t: Any, limit: int, **arguments: Any) -> tuple[int, Callable[[], Awaitable[str]]]:
        return limit, lambda: t.invoke(arguments, ctx)

    return [
        (
            "search_files, evil regex",
            _search.MAX_SEARCH_FILE_BYTES,
            *tool(search_files, 0, pattern=r"(x+x+)+y", path="evil.txt"),
        ),
        (
            "search_files, evil glob",
            _search.MAX_SEARCH_FILE_BYTES,
            *tool(search_files, 0, pattern="n", glob="*a" * 20 + "*b"),
        ),
        ("read_file, 1 GiB one line", MAX_READ_CHARS, *tool(read_file, 0, path="huge.txt")),
        ("read_file, 1 GiB, offset=5", MAX_READ_CHARS, *tool(read_file, 0, path="huge.txt", offset=5)),
        (
            "edit_file, 1 GiB (refused)",
            MAX_EDIT_BYTES,
            *tool(edit_file, 0, path="huge.txt", old="x", new="y"),
        ),
        (
            "edit_file, snippet everywhere",
            MAX_EDIT_BYTES,
            *tool(edit_file, 0, path="a.txt", old="a", new="b"),
        ),
        ("list_files, crowded folder", MAX_READ_CHARS, *tool(list_files, 0, path="crowd", depth=1)),
        ("web_fetch, 3x gzip bomb", FETCH_MAX_BYTES, *tool(web, 0, url=url + "/bomb")),
        ("web_fetch, nested HTML", FETCH_MAX_BYTES, *tool(web, 0, url=url + "/nested")),
    ]


def _row(cells: list[str]) -> str:
    widths = [30, 14, 8, 10, 12, 8, 10]
    return "  ".join(
        c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )


async def main(quick: bool) -> None:
    _search.SEARCH_SECONDS = 2.0
    with tempfile.TemporaryDirectory() as tmp:
        box = LocalSandbox.create(Path(tmp) / "sandboxes", "bench", isolate=False)
        (box.path / "evil.txt").write_text("x" * 40 + "\n")
        (box.path / ("a" * 200)).write_text("needle\n")
        with (box.path / "huge.txt").open("wb") as handle:
            handle.write(b"x" * 100_000)
            handle.truncate(GIB)
        (box.path / "a.txt").write_bytes(b"a\n" * 2_000_000)
        (box.path / "crowd").mkdir()
        for i in range(20_000 if quick else 50_000):
            (box.path / "crowd" / f"f{i:05}").touch()
        headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip, gzip"}
        routes = {
            "/bomb": (headers, _bomb(256 << 20 if quick else GIB)),
            "/nested": ({"Content-Type": "text/html"}, _nested(20_000)),
        }
        port, httpd = _serve(routes)
        print(
            f"wire: bomb {len(routes['/bomb'][1]):,} bytes; nested HTML {len(routes['/nested'][1]):,} bytes"
        )
        print(_row(["tool, input", "longest block", "target", "took", "peak", "limit", "peak/limit"]))
        for name, limit, _, call in _cases(box, port):
            block_ms, took, peak, result = await _measure(call)
            print(
                _row(
                    [
                        name,
                        f"{block_ms:.1f} ms",
                        f"<= {TARGET_BLOCK_MS:g}",
                        f"{took:.2f} s",
                        f"{peak / 1e6:.2f} MB",
                        f"{limit / 1e6:.2f} MB",
                        f"{peak / limit:.2f}x",
                    ]
                )
            )
            print("    -> " + result.splitlines()[-1][:100])
        httpd.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    anyio.run(main, parser.parse_args().quick)
