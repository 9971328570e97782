"""What the opencode and pi harnesses share: finding the host's binary, the environment it runs in,
and the chat endpoint the judges use when the runs' model is served by one we declared."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from machine.errors import HarnessError
from machine.runs import HarnessRequest

from .._routes import Route
from ..chat import Endpoint

PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS")
"""Variables a host process keeps from ours; everything else (keys of other services included) stays out."""
PROVIDER_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "VERTEX_", "CLOUDFLARE_")
"""Credentials of the hosts' own cloud providers (Bedrock, Azure, Vertex, Workers AI), besides keys."""


def find_binary(name: str, env_var: str, install: str, given: str | Path | None = None) -> str:
    """``given``, else ``$env_var``, else ``name`` on PATH; missing, the error says how to install it."""
    candidate = str(given or os.environ.get(env_var) or name)
    found = shutil.which(candidate)
    if found is None:
        raise HarnessError(
            f"the {name} harness needs the `{name}` program, which is not on PATH: install it "
            f"({install}) or point {env_var} at it"
        )
    return os.path.abspath(found)


def host_environment(
    route: Route | None, home: Path, extra: Mapping[str, str] | None = None, *, own_keys: bool = False
) -> dict[str, str]:
    """A clean environment for a host process: a private ``home``, the route's key, and ``extra``.

    ``own_keys`` also passes every ``*_API_KEY`` variable and the cloud providers' credentials, for a model
    the host serves with its own provider configuration (which of them it needs is the host's business)."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(home)
    for kind in ("CONFIG", "DATA", "CACHE", "STATE"):
        env[f"XDG_{kind}_HOME"] = str(home / kind.lower())
    if own_keys:
        env.update(
            {k: v for k, v in os.environ.items() if k.endswith("_API_KEY") or k.startswith(PROVIDER_PREFIXES)}
        )
    if route is not None and route.key_env and route.key_env in os.environ:
        env[route.key_env] = os.environ[route.key_env]
    env.update(extra or {})
    return env


def judge_endpoint(base_url: str | None) -> Endpoint | None:
    """The endpoint the judges share with the runs when ``--base-url`` named one; else None, and the
    judges go where a judge model's id says (Tinker by default)."""
    if not base_url:
        return None
    return Endpoint("openai", base_url.rstrip("/"), os.environ.get("OPENAI_API_KEY"))


@contextlib.asynccontextmanager
async def served_tools(request: HarnessRequest) -> AsyncIterator[Any]:
    """The run's tools on a per-run MCP server (``ServedTools``: URL and token), or None for a run
    without tools."""
    if not request.tools:
        yield None
        return
    try:
        from ..tool_server import serve_run_tools  # the mcp extra: only for runs with tools
    except ImportError as error:
        raise HarnessError(
            f"this harness serves the run's tools over MCP, which needs the mcp extra ({error}): "
            "pip install 'machine[mcp]'"
        ) from None
    async with serve_run_tools(request.tools, request.tool_context) as served:
        yield served
