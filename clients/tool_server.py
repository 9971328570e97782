"""Per-run tool servers: a run's tools served over MCP (streamable HTTP) on 127.0.0.1 to an agent loop in
another process (opencode, pi), so each tool call acts in that run's sandbox. Harnesses use it; it needs
only the ``mcp`` extra. Every request needs a bearer token minted for that server alone, never logged,
and revoked with the server stopped when the block that serves the tools ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from machine.runs import Tool, ToolContext, ToolFailure

if TYPE_CHECKING:
    import anyio
    from mcp.server.auth.provider import AccessToken

log = logging.getLogger("machine.clients.tool_server")

HOST = "127.0.0.1"
PATH = "/mcp"
SCOPE = "machine-run"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 600.0
TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 43
"""The length of ``TOKEN_BYTES`` random bytes in URL-safe base64; a run's server refuses a shorter token."""


def new_token() -> str:
    """A fresh bearer token: 32 random bytes (256 bits), URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def loopback_security() -> Any:
    """DNS-rebinding protection for a server on loopback: a foreign Host gets 421, a foreign Origin 403."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


@dataclass(frozen=True)
class ServedTools:
    """Where a run's tools are served and the bearer token that opens them (hidden from ``repr``); callers
    keep the token out of runs and events, handing it to the harness's config or environment only."""

    url: str
    token: str = field(repr=False)
    run_id: str = ""

    @property
    def headers(self) -> dict[str, str]:
        """The header every request must carry."""
        return {"Authorization": f"Bearer {self.token}"}


class RunTokenVerifier:
    """Accepts exactly this run's token, compared in constant time, until revoked. A token shorter than
    ``MIN_TOKEN_CHARS`` is refused here, so a server can never be opened by an empty or guessable one."""

    def __init__(self, token: str, run_id: str) -> None:
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"a run's bearer token needs at least {MIN_TOKEN_CHARS} characters, got {len(token)}: "
                "make it with new_token()"
            )
        self._token: bytes | None = token.encode()
        self._run_id = run_id

    def revoke(self) -> None:
        self._token = None

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        expected = self._token
        if expected is None or not hmac.compare_digest(token.encode(), expected):
            return None
        # The SDK keeps AccessToken.token around (auth context, sessions): give it a label, not the secret.
        return AccessToken(token=f"run:{self._run_id}", client_id=f"run:{self._run_id}", scopes=[SCOPE])

    def __repr__(self) -> str:
        return f"RunTokenVerifier(run={self._run_id!r}, <token hidden>)"


def _text_result(text: str, *, is_error: bool) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def build_run_server(
    tools: Sequence[Tool], ctx: ToolContext, *, call_timeout_s: float = CALL_TIMEOUT_S
) -> Any:
    """The low-level MCP server exposing exactly ``tools``, each with its own schema, invoked with ``ctx``;
    a ``ToolFailure`` comes back as an ``isError`` result with its message, as in the in-process loop."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    by_name: dict[str, Tool] = {}
    for t in tools:
        if t.name in by_name:
            raise ValueError(f"two tools are named {t.name!r}; a run's tools need distinct names")
        by_name[t.name] = t
    listed = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.parameters))
        for t in by_name.values()
    ]

    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        found = by_name.get(params.name)
        if found is None:
            names = ", ".join(by_name) or "(none)"
            return _text_result(  # type: ignore[no-any-return]
                f"there is no tool named {params.name!r}; the tools are: {names}", is_error=True
            )
        try:
            with anyio.fail_after(call_timeout_s):
                text = await found.invoke(params.arguments or {}, ctx)
        except ToolFailure as failure:
            return _text_result(str(failure), is_error=True)  # type: ignore[no-any-return]
        except TimeoutError:
            return _text_result(  # type: ignore[no-any-return]
                f"{found.name} timed out after {call_timeout_s:g} s", is_error=True
            )
        except Exception as error:  # the model sees what failed; the server keeps serving
            log.warning("tool %s failed in run %s: %s", found.name, ctx.run_id, type(error).__name__)
            return _text_result(  # type: ignore[no-any-return]
                f"{found.name} failed: {type(error).__name__}: {error}", is_error=True
            )
        return _text_result(text, is_error=False)  # type: ignore[no-any-return]

    def input_schema(name: str) -> dict[str, Any] | None:
        found = by_name.get(name)
        return None if found is None else found.parameters

    return Server(
        "machine-run-tools",
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _quiet_uvicorn(app: Any) -> Any:
    """A uvicorn server for ``app`` on 127.0.0.1, any free port: no access log, the host process's logging
    configuration and signal handlers left alone."""
    import uvicorn

    class _Embedded(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            yield  # Ctrl-C belongs to the program that started the run

    config = uvicorn.Config(
        app,
        host=HOST,
        port=0,
        log_config=None,
        log_level=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(STOP_TIMEOUT_S),
    )
    return _Embedded(config)


@contextlib.asynccontextmanager
async def serve_run_tools(
    tools: Sequence[Tool], ctx: ToolContext, *, call_timeout_s: float = CALL_TIMEOUT_S
) -> AsyncIterator[ServedTools]:
    """Serve ``tools`` (acting with ``ctx``) at ``served.url`` behind ``served.headers`` for the block's
    duration; the token is revoked and the server stopped when it ends."""
    import anyio
    from mcp.server.auth.settings import AuthSettings

    server = build_run_server(tools, ctx, call_timeout_s=call_timeout_s)
    token = new_token()
    verifier = RunTokenVerifier(token, ctx.run_id)
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        host=HOST,
        transport_security=loopback_security(),
        auth=AuthSettings(
            issuer_url=f"http://{HOST}",
            resource_server_url=None,
            required_scopes=[SCOPE],
        ),
        token_verifier=verifier,
    )
    web = _quiet_uvicorn(app)
    failed: list[str] = []
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await web.serve()
        except SystemExit:  # uvicorn exits on a failed start-up (it has logged why)
            failed.append("start-up failed")
        finally:
            for listener in web.servers:
                listener.close()
            stopped.set()

    # uvicorn is asyncio-only. A task of its own, outside the caller's cancel scopes: the server always shuts
    # down through should_exit (set below, whatever ends the block), so a failed or cancelled run still closes
    # its port and ends its sessions, and the caller's exception comes back as it was raised.
    task = asyncio.get_running_loop().create_task(serve(), name=f"tool server of run {ctx.run_id}")
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            while not web.started:
                if failed or stopped.is_set():
                    raise RuntimeError(f"the tool server of run {ctx.run_id} did not start")
                await anyio.sleep(0.002)
        port = web.servers[0].sockets[0].getsockname()[1]
        yield ServedTools(url=f"http://{HOST}:{port}{PATH}", token=token, run_id=ctx.run_id)
    finally:
        verifier.revoke()
        await _shut_down(web, task, stopped)


async def _shut_down(web: Any, task: asyncio.Task[None], stopped: anyio.Event) -> None:
    """Stop the server, shielded from the caller's cancellation: a graceful exit, then a forced one, then
    the task cancelled and its listeners closed, so its port refuses connections whatever happened."""
    import anyio

    web.should_exit = True
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(STOP_TIMEOUT_S * 2):
            await stopped.wait()
        if not stopped.is_set():  # connections that would not close: stop waiting for them
            web.force_exit = True
            with anyio.move_on_after(STOP_TIMEOUT_S):
                await stopped.wait()
        if not stopped.is_set():
            task.cancel()
            for listener in web.servers:
                listener.close()
