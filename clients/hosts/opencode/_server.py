"""Starting and stopping ``opencode serve``: a private home, a random password, nothing of a person's setup.

The server is a child in its own process group, stopped with its whole group even when this process dies.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from machine.errors import HarnessError

from .._programs import host_environment

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
SWITCHES = (
    "OPENCODE_DISABLE_PROJECT_CONFIG",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_AUTOCOMPACT",
)
"""opencode's switches that keep project config, instruction files, skills, plugins and updates out."""
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class _Server:
    """A running ``opencode serve``: its process, address, password and private home."""

    process: subprocess.Popen[bytes]
    url: str
    password: str
    home: Path

    def client(self, timeout: float) -> httpx.AsyncClient:
        """A client of the server, with its password and no proxy from the environment."""
        return httpx.AsyncClient(
            base_url=self.url, auth=("opencode", self.password), timeout=timeout, trust_env=False
        )

    def log_tail(self, chars: int = 800) -> str:
        """The end of the server's log, for an error message (empty when there is none)."""
        try:
            return (self.home / "serve.log").read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""


def _stop(process: subprocess.Popen[bytes], home: Path) -> None:
    """Stop the server's whole process group and remove its private home."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    shutil.rmtree(home, ignore_errors=True)


def _pdeathsig() -> Any:
    """Linux: a function for the child (between fork and exec) that asks for SIGTERM when this process
    dies without stopping the server. Resolved here, in the parent: the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return functools.partial(prctl, 1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _check(reply: httpx.Response, what: str) -> None:
    """Fail the run with ``what`` when the server refused a request."""
    if reply.status_code >= 400:
        raise HarnessError(f"{what}: HTTP {reply.status_code} {reply.text[:300]}")


async def start_server(binary: str, config: Mapping[str, Any], owner: object) -> _Server:
    """Start ``opencode serve`` with ``config`` merged into its own, and wait until it listens.

    It runs with a private, empty config home (``HOME`` and the XDG folders in a 0700 temporary folder,
    removed when it stops), a random password and every switch in ``SWITCHES`` on, so a person's own
    opencode setup never reaches a run. It is stopped when ``owner`` is garbage collected, if not before."""
    home = Path(tempfile.mkdtemp(prefix="machine-opencode-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        password = secrets.token_urlsafe(32)
        base = {
            "$schema": "https://opencode.ai/config.json",
            "share": "disabled",
            "autoupdate": False,
            "snapshot": False,
            **config,
        }
        extra = {
            "OPENCODE_CONFIG_CONTENT": json.dumps(base),
            "OPENCODE_SERVER_PASSWORD": password,
            **{switch: "1" for switch in SWITCHES},
        }
        env = host_environment(None, home, extra, own_keys=True)
        with (home / "serve.log").open("wb") as log:
            try:
                process = subprocess.Popen(
                    [binary, "serve", "--pure", "--hostname", "127.0.0.1", "--port", "0"],
                    cwd=home,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_pdeathsig(),
                )
            except OSError as error:
                raise HarnessError(f"could not start {binary}: {error}") from None
        weakref.finalize(owner, _stop, process, home)  # a harness never closed still stops its server
        return await _listening(_Server(process, "", password, home))
    except BaseException:  # failed or cancelled: nothing of this start is left behind
        with anyio.CancelScope(shield=True):
            if process is not None:
                await anyio.to_thread.run_sync(_stop, process, home)
            shutil.rmtree(home, ignore_errors=True)
        raise


async def _listening(server: _Server) -> _Server:
    """The server once its log says where it listens; it failing or taking too long fails the run."""
    with anyio.move_on_after(START_TIMEOUT_S):
        while server.process.poll() is None:
            found = LISTENING.search(server.log_tail(4000))
            if found:
                server.url = found.group(1)
                return server
            await anyio.sleep(0.02)
    raise HarnessError(f"opencode serve did not start: {server.log_tail() or 'it printed nothing'}")
