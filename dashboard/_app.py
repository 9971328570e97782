"""The dashboard's web app (Starlette): the page and its modules, the JSON endpoints, and the server-sent
events that tell an open page what changed, all behind the access guard. Blocking reads (the store, the
files) run in worker threads, so one slow answer never holds up the events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from machine.errors import BadInputError, Fix, MachineError, NotFoundError
from machine.runs import EVENTS_FILE
from machine.workspace import Workspace

from ._access import Guard
from ._api import Api
from ._body import TooLarge, body_of
from ._csrf import META, PageTokens
from ._events import MAX_STREAMS, Streams
from ._follow import Follower
from ._marks import MarkRequest, mark

STATIC = Path(__file__).parent / "static"


def _json(value: Any, status: int = 200) -> Response:
    return JSONResponse(value, status_code=status, headers={"cache-control": "no-store"})


ENDPOINTS = {"runs": "GET /api/runs?machine={machine}"}
"""The endpoint that does each operation a fix can name, for the fixes an HTTP client can follow."""


def said(error: MachineError) -> str:
    """The error as an HTTP client reads it: a fix spelt as the endpoint that does it, where there is
    one, and left out where there is none (never a Python call or a flag, which a client cannot make)."""

    def spell(fix: Fix) -> str | None:
        endpoint = ENDPOINTS.get(fix.operation) if fix.operation else None
        return None if endpoint is None else f"`{endpoint.format(machine=fix.machine or 'NAME')}`"

    return error.explain(spell)


async def answer(call: Callable[[], Awaitable[Any]]) -> Response:
    """``call``'s answer as JSON, or its error as JSON with the status that fits it."""
    try:
        return _json(await call())
    except NotFoundError as error:
        return _json({"error": said(error)}, 404)
    except TooLarge as error:
        return _json({"error": said(error)}, 413)
    except BadInputError as error:
        return _json({"error": said(error)}, 400)
    except MachineError as error:
        return _json({"error": said(error)}, 500)


def build_app(
    ws: Workspace, *, host: str = "127.0.0.1", token: str | None = None, max_streams: int = MAX_STREAMS
) -> Any:
    """The app for ``ws``, guarded for a server listening on ``host`` (``token``: required off loopback),
    serving at most ``max_streams`` event streams at once."""
    follower = Follower(ws.data_dir / EVENTS_FILE, ws.store.data_version)
    pages = PageTokens()
    api = Api(ws, follower)
    streams = Streams(follower, max_streams)

    def handler(read: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return await answer(lambda: anyio.to_thread.run_sync(read, request))

        return endpoint

    async def marks(request: Request) -> Response:
        async def made() -> Any:
            return await mark(ws, request.path_params["run_id"], await body_of(request, MarkRequest))

        return await answer(made)

    index = (STATIC / "index.html").read_text(encoding="utf-8")

    async def page(request: Request) -> Response:
        """The page, with a CSRF token of its own for the changes it makes (``_csrf``)."""
        html = index.replace(
            f'<meta name="{META}" content="">', f'<meta name="{META}" content="{pages.mint()}">'
        )
        return HTMLResponse(html, headers={"cache-control": "no-store"})

    routes = [
        Route("/", page),
        Route("/api/machines", handler(lambda r: api.machines())),
        Route("/api/machines/{name:path}/trend", handler(lambda r: api.machine(r.path_params["name"]))),
        Route("/api/machines/{name:path}/failures", handler(lambda r: api.failures(r.path_params["name"]))),
        Route("/api/runs", handler(lambda r: api.runs(r.query_params))),
        Route("/api/runs/{run_id}", handler(lambda r: api.run(r.path_params["run_id"]))),
        Route("/api/running", handler(lambda r: api.running())),
        Route("/api/compare", handler(lambda r: api.compare(r.query_params))),
        Route("/api/training", handler(lambda r: api.trainings(r.query_params.get("machine")))),
        Route("/api/training/{record_id}", handler(lambda r: api.training(r.path_params["record_id"]))),
        Route("/api/spending", handler(lambda r: api.spending(r.query_params))),
        Route("/api/pair", handler(lambda r: api.pair(r.query_params))),
        Route("/api/review", handler(lambda r: api.review(r.query_params))),
        Route("/api/runs/{run_id}/marks", marks, methods=["POST"]),
        Route("/api/events", streams.endpoint),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(follower.start_at_tail)
        async with anyio.create_task_group() as group:
            group.start_soon(follower.run)
            yield
            group.cancel_scope.cancel()

    app = Starlette(routes=routes, lifespan=lifespan)
    return Guard(app, host=host, token=token, pages=pages)


__all__ = ["build_app"]
