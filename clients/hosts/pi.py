"""The pi harness: one run through the Pi coding agent (``pi --mode json -p``), its tools served from here.

Pi runs the agent loop in a private folder, sealed off from the person's own pi; this process serves the
run's tools over MCP (``serve_run_tools``) to an extension generated for the run, so every call acts in
the run's sandbox exactly as in the in-process loop. See docs/concepts.md, "opencode and pi".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from machine.runs import HarnessRequest, HarnessResult, Message

from .._endpoint import Endpoint, model_timeout
from .._routes import Route, route_model
from ._pi_config import TOKEN_ENV, URL_ENV, pi_arguments, settings
from ._pi_events import Progress
from ._programs import find_binary, host_environment, judge_endpoint, served_tools
from ._proxy import metered, proxied

PI_PACKAGE = "@mariozechner/pi-coding-agent@0.73.1"
INSTALL = f"npm install -g {PI_PACKAGE}"
STDERR_KEEP = 8000
"""The tail of pi's stderr kept for an error message."""
PROXIED_KEY = "held-by-the-model-proxy"
LINE_LIMIT = 1 << 26
"""Pi writes one JSON event a line, and a streamed reply's events repeat the whole reply so far."""


@contextlib.contextmanager
def _private_dir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="machine-pi-"))  # 0700
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _stop(process: asyncio.subprocess.Process, grace_s: float) -> None:
    """End pi and all it started: SIGTERM to its process group (pi closes its session), then SIGKILL."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            with anyio.move_on_after(grace_s):
                await process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


class PiHarness:
    """Runs each run's agent loop in pi, with the run's tools, model and instructions only."""

    name = "pi"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        binary: str | Path | None = None,
        max_retries: int = 4,
        retry_delay_s: float = 1.0,
        stop_grace_s: float = 2.0,
    ) -> None:
        self.base_url = base_url
        self.binary = find_binary("pi", "MACHINE_PI", INSTALL, binary)
        self.max_retries = max_retries
        """Pi's retries of a failed model call (429, 5xx, network), waiting ``retry_delay_s`` doubling."""
        self.retry_delay_s = retry_delay_s
        self.stop_grace_s = stop_grace_s

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint the judges share with the runs (with ``base_url``), else None."""
        return judge_endpoint(self.base_url)

    async def aclose(self) -> None:
        """Nothing to close: each run's pi process and tool server end with the run."""

    async def run(self, request: HarnessRequest) -> HarnessResult:
        """One run in a pi process of its own, with the run's tools served to it while it runs."""
        binary = self.binary
        route = route_model(request.model, harness=self.name, base_url=self.base_url)
        progress = Progress(request, [Message(role="user", content=request.input)], metered=not route.own)
        if request.max_steps <= 0:
            return self._result(progress, "max_steps", None)
        timeout_s = model_timeout()
        with _private_dir() as root:
            async with served_tools(request) as served, proxied(route, request) as (host_route, meter):
                stop_reason, error = await self._run_pi(
                    binary, (route, host_route), request, root, served, progress, timeout_s
                )
        if served is not None and error:
            error = error.replace(served.token, "<token>")
        return metered(self._result(progress, stop_reason, error), meter)

    def _result(self, progress: Progress, stop_reason: str, error: str | None) -> HarnessResult:
        return HarnessResult(
            trajectory=progress.trajectory,
            usage=progress.usage,
            cost_usd=progress.cost,
            stop_reason=stop_reason,
            error=error,
            retries=progress.retries,
        )

    async def _run_pi(
        self,
        binary: str,
        routes: tuple[Route, Route],
        request: HarnessRequest,
        root: Path,
        served: Any,
        progress: Progress,
        timeout_s: float,
    ) -> tuple[str, str | None]:
        """Run pi to the end (or to ``max_steps``, or the time limit); the stop reason and any error.
        ``routes``: the model's route, and the one pi is pointed at (through the model proxy)."""
        route, host_route = routes
        # Pi works in a private folder, never the sandbox: it merges any .pi/settings.json of its working
        # folder over ours, and a run's files (or a person's project) are no place for pi's settings.
        # The tools act in the sandbox through the tool server wherever pi runs.
        cwd = root / "work"
        cwd.mkdir()
        config = settings(max_retries=self.max_retries, retry_delay_s=self.retry_delay_s, timeout_s=timeout_s)
        args, extra = pi_arguments(host_route, request, root, cwd, config)
        if served is not None:
            extra[URL_ENV], extra[TOKEN_ENV] = served.url, served.token
        (root / "home").mkdir(mode=0o700)
        env = host_environment(host_route, root / "home", extra, own_keys=route.own)
        if host_route is not route and route.key_env in env:
            env[route.key_env] = PROXIED_KEY  # the proxy holds the real key; pi never sees it
        process = await asyncio.create_subprocess_exec(
            binary,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            limit=LINE_LIMIT,
        )
        said, limit = "", timeout_s * (request.max_steps + 1)
        try:
            with anyio.move_on_after(limit) as scope:
                said = await self._watch(process, request.input, progress)
        finally:
            await _stop(process, self.stop_grace_s)
        if progress.max_steps:
            return "max_steps", None
        if progress.finished:  # pi finished the run; how it then exited does not matter
            return "end_turn", None
        if scope.cancelled_caught:
            return "error", f"pi did not finish the run within {limit:g} s (MACHINE_MODEL_TIMEOUT per step)"
        if progress.error is not None:
            where = f"{route.provider} ({route.base_url})" if route.base_url else route.provider
            tries = f" after {len(progress.retries) + 1} attempts" if progress.retries else ""
            reason = f"pi's call to {request.model!r} at {where} failed{tries}: {progress.error}"
            if "timed out" in progress.error.lower():
                reason += f" (a model call may take MACHINE_MODEL_TIMEOUT={timeout_s:g} s)"
            return "error", reason
        if process.returncode:
            return "error", f"pi exited with status {process.returncode}: {said or 'it printed no reason'}"
        return "error", f"pi ended without a reply from the model: {said or 'it printed no reason'}"

    async def _watch(self, process: asyncio.subprocess.Process, input: str, progress: Progress) -> str:
        """Feed pi the input and follow its events until it ends the run or reaches ``max_steps``;
        the tail of what it said on stderr."""
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        said = bytearray()
        drained = anyio.Event()

        async def feed() -> None:
            # On stdin (pi trims it), so text that starts with ``-`` or ``@`` is not read as a flag or a file.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                stdin.write(input.encode())
                await stdin.drain()
                stdin.close()

        async def drain() -> None:
            while chunk := await stderr.read(65536):
                said.extend(chunk)
                del said[:-STDERR_KEEP]
            drained.set()

        async with anyio.create_task_group() as group:
            group.start_soon(feed)
            group.start_soon(drain)
            while True:
                try:
                    line = await stdout.readline()
                except ValueError:  # an event longer than LINE_LIMIT: pi is stopped, the run fails
                    progress.error = f"pi printed an event longer than {LINE_LIMIT} bytes"
                    break
                if not line:
                    break
                if line.startswith(b'{"type":"message_update"'):
                    progress.text_delta(line.decode())
                    continue
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if isinstance(event, dict):
                        progress.event(event)
                if progress.max_steps or progress.finished:
                    break
            if not progress.max_steps:  # pi exits on its own at the end of a run
                with anyio.move_on_after(self.stop_grace_s):
                    await process.wait()
                    await drained.wait()
            group.cancel_scope.cancel()
        return said.decode(errors="replace").strip()


__all__ = ["PiHarness"]
