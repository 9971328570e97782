"""A real Ray cluster on this computer for the executor's tests and benchmark: a head with no CPU (it only
schedules) and two worker nodes, each started by ``ray start`` as a person would, every address on the
loopback network (127.0.0.2: Ray turns 127.0.0.1 into the computer's network address), with a small object
store. ``stop`` ends every Ray process of the computer, so one module at a time may use it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helpers.env import clean_env

HOST = "127.0.0.2"
RAY = Path(sys.executable).parent / "ray"
AUTH_MODE = "RAY_AUTH_MODE"
COMMON = ["--node-ip-address", HOST, "--object-store-memory", "100000000", "--disable-usage-stats"]


@dataclass
class Cluster:
    address: str
    folder: Path

    def add_worker(self, cpus: int = 1) -> None:
        _ray("start", "--address", self.address, "--num-cpus", str(cpus), *COMMON)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _ray(*args: str) -> None:
    done = subprocess.run([str(RAY), *args], capture_output=True, text=True, timeout=120, env=clean_env())
    if done.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def stop() -> None:
    """Every Ray process of the computer ended; this process left its cluster first (a driver whose
    cluster vanishes under it exits at once)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120, env=clean_env())


@contextmanager
def cluster(workers: int = 2) -> Iterator[Cluster]:
    """The cluster, and every process that joins it (this one, the commands it starts), without Ray's token
    authentication, whatever a ``~/.ray/auth_token`` left by an earlier local cluster would turn on."""
    folder = Path(tempfile.mkdtemp(prefix="machine-ray-"))
    address = f"{HOST}:{_free_port()}"
    mode = os.environ.get(AUTH_MODE)
    os.environ[AUTH_MODE] = "disabled"
    try:
        _ray(
            "start", "--head", "--port", address.rsplit(":", 1)[1], "--num-cpus", "0",
            "--include-dashboard", "false", "--temp-dir", str(folder), *COMMON,
        )  # fmt: skip
        made = Cluster(address, folder)
        for _ in range(workers):
            made.add_worker()
        yield made
    finally:
        stop()
        shutil.rmtree(folder, ignore_errors=True)
        if mode is None:
            os.environ.pop(AUTH_MODE, None)
        else:
            os.environ[AUTH_MODE] = mode
