"""Local HTTP test servers that keep their noise out of other tests: a connection that goes away mid-request
(a client that stopped reading, or the server's own stop closing it) is no error of the server's, and
anything else is printed to the process's own stderr, never to ``sys.stderr``, which a later test in the
same worker may be capturing (a CLI runner's) when a handler thread outlives its test."""

from __future__ import annotations

import sys
import traceback
from http.server import ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        print(f"test server: error handling a request from {client_address}", file=sys.__stderr__)
        traceback.print_exc(file=sys.__stderr__)
