"""A real PostgreSQL server for the store's tests: Debian's ``postgres`` started in a folder of its own on a
free loopback port (trust authentication, TCP on 127.0.0.1 only), stopped at the end. As root it runs as
the ``postgres`` user, which the server requires. Each test gets a database schema of its own, named in
the URL it is given, so tests never see each other's runs. Every wait is bounded."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.env import on_ci
from helpers.processes import end

START_S = 60.0
USER = "machine"


def program(name: str) -> str | None:
    """A PostgreSQL program: on PATH, else the newest of Debian's /usr/lib/postgresql/*/bin."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return versions[-1] if versions else None


def missing() -> str | None:
    """Why no server can be started here (None: it can); under CI that fails the test that needs it."""
    if program("initdb") is None or program("postgres") is None:
        why = "PostgreSQL is not installed (apt-get install postgresql)"
        if on_ci():
            raise RuntimeError(f"{why}, and CI=true requires it: make test installs it")
        return why
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server() -> Iterator[str]:
    """A running server; yields the URL of its ``postgres`` database."""
    folder = Path(tempfile.mkdtemp(prefix="machine-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    subprocess.run(
        [*as_user, str(program("initdb")), "-D", str(data), "-A", "trust", "-U", USER, "--no-sync"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = _free_port()
    settings = ["listen_addresses=127.0.0.1", f"unix_socket_directories={folder}", "fsync=off",
                "synchronous_commit=off", "full_page_writes=off"]  # fmt: skip
    running = subprocess.Popen(
        [*as_user, str(program("postgres")), "-D", str(data), "-p", str(port), *[f"-c{s}" for s in settings]],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    try:
        _wait(url, running)
        yield url
    finally:
        end(running, timeout_s=30)
        shutil.rmtree(folder, ignore_errors=True)


def _wait(url: str, running: subprocess.Popen[bytes]) -> None:
    import psycopg

    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if running.poll() is not None:
            raise RuntimeError(f"postgres exited: {running.stderr.read().decode() if running.stderr else ''}")
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise RuntimeError(f"postgres did not accept connections within {START_S} s")


def fresh_schema(url: str) -> str:
    """A new, empty schema of the server's database, and the URL whose connections use it."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {name}")
    return f"{url}?options=-csearch_path%3D{name}"
