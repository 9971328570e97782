"""Runs made on a Ray cluster (``--executor ray``): the workspace's machines folder is shipped as the job's
working directory (its files as they are now; each run records the workspace's git revision), one runner
actor per node of the cluster makes runs there, each in a sandbox of its worker's own, and hands the
finished run back to this process, which grades, charges the one budget and stores it. A machine loaded
from another folder (an earlier revision's, for a comparison) has that folder sent once through the
cluster's object store; a run's own instructions (an optimizer's proposal) go with the run.

Concurrency is the cluster's, capped by ``--concurrency``: the orders in flight are spread over the
runners, the least busy first. A worker that dies loses only the runs it was making: its runner is
replaced by a new one wherever the cluster has room, and each of those runs is made once more; a run
lost twice is stored as a failed run saying so. Ray is imported only when a Ray executor starts.

The workspace's record of trusted files goes with each runner, which checks every file a model wrote
against it before importing it (see ``_ray_runner``): a machine that loads here but not there fails the
command with the worker's reason.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import socket
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine.errors import BadInputError, BudgetExceeded, DefinitionError, Fix
from machine.runs import Run
from machine.workspace import RunOrder

from ._runner import BUDGET_SPENT, REFUSED, Runner

LEFT_BEHIND = ("__pycache__", ".machine", ".git")
"""Folders never sent to the cluster (nor ``*.pyc`` files)."""
SHIPPED_IGNORE = shutil.ignore_patterns(*LEFT_BEHIND, "*.pyc")
SCRIPTS = ".scripts"
"""Where a script file from outside the machines folder is put in the shipped folder."""


@dataclass
class RayExecutor:
    """Makes runs on the Ray cluster at ``address`` (None: ``RAY_ADDRESS``, else the local one)."""

    root: Path
    address: str | None = None
    harness: str | None = None
    script: str | None = None
    base_url: str | None = None
    concurrency: int = 4
    trust: Path | None = None
    """The workspace's record of trusted files (``.machine/trust.json``), sent to every runner."""
    name: str = field(default="ray", init=False)
    trusted: bytes | None = field(default=None, init=False)
    """The record as it was when the executor started: what every runner checks against."""
    shipped: Path | None = field(default=None, init=False)
    actors: list[Any] = field(default_factory=list, init=False)
    busy: list[int] = field(default_factory=list, init=False)
    """The runs in flight at each runner."""
    per_actor: int = field(default=1, init=False)
    sent: dict[str, tuple[str, list[Any]]] = field(default_factory=dict, init=False)
    """Each other machines folder sent to the cluster: its content's key and (in a list, so Ray hands
    the runner the reference, not the bytes) its object."""

    def start(self) -> None:
        """Ship the machines folder, connect to the cluster and start a runner on each of its nodes."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        _reachable(self.address)
        self.shipped = self._ship()
        if self.trust is not None and self.trust.is_file():
            self.trusted = self.trust.read_bytes()
        try:
            ray.init(
                address=self.address,
                runtime_env={"working_dir": str(self.shipped)},
                log_to_driver=False,
                configure_logging=False,
                namespace="machine",
            )
        except (ConnectionError, RuntimeError, SystemExit) as error:  # Ray exits when its head never answers
            self.close()
            raise _unreachable(self.address, str(error) or type(error).__name__) from None
        nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        if not nodes:
            self.close()
            raise BadInputError(
                "the Ray cluster has no node with a CPU to run on: start a worker on each computer that "
                "should make runs, joined to the head (Ray's own start command, given the head's address)"
            )
        self.per_actor = max(1, -(-self.concurrency // len(nodes)))
        for node in nodes:  # one on each node, there and nowhere else (each waits for its node)
            self.actors.append(self._runner(NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)))
        self.busy = [0] * len(self.actors)

    def _runner(self, strategy: Any = "DEFAULT") -> Any:
        import ray

        options = {"max_concurrency": self.per_actor, "num_cpus": 0, "scheduling_strategy": strategy}
        made = ray.remote(Runner).options(**options)
        return made.remote(self.harness, self._script(), self.base_url, self.trusted)

    def _replace(self, chosen: int, lost: Any) -> None:
        """A runner whose worker died, replaced by one wherever the cluster has room (once, however many
        of its runs learn of it)."""
        if self.actors[chosen] is lost:
            self.actors[chosen] = self._runner()

    def _ship(self) -> Path:
        """A folder holding the workspace's ``machines/`` (and the script, when it lies outside it)."""
        folder = Path(tempfile.mkdtemp(prefix="machine-ship-"))
        shutil.copytree(self.root / "machines", folder / "machines", ignore=SHIPPED_IGNORE)
        script = None if self.script is None else Path(self.script)
        if script is not None and not self._inside(script):
            (folder / SCRIPTS).mkdir()
            if script.is_dir():  # a folder of scripts, one for each machine
                shutil.copytree(script, folder / SCRIPTS / script.name, ignore=SHIPPED_IGNORE)
            else:
                shutil.copy2(script, folder / SCRIPTS / script.name)
        return folder

    def _inside(self, path: Path) -> bool:
        return path.resolve().is_relative_to((self.root / "machines").resolve())

    def _script(self) -> str | None:
        """The script's path inside the shipped folder."""
        if self.script is None:
            return None
        path = Path(self.script).resolve()
        if self._inside(path):
            return str(path.relative_to(self.root.resolve()))
        return f"{SCRIPTS}/{path.name}"

    def _sent(self, folder: str | None) -> tuple[str, list[Any]] | None:
        """The machines folder ``folder`` as the runners fetch it (packed and put once), or None for the
        shipped one."""
        import ray

        if folder is None:
            return None
        if folder not in self.sent:
            packed = _packed(Path(folder))
            self.sent[folder] = (hashlib.sha256(packed).hexdigest()[:16], [ray.put(packed)])
        return self.sent[folder]

    async def run(self, order: RunOrder) -> Run:
        """One run, made by the least busy runner; a run whose worker died is made once more by another
        runner, and one lost twice is a failed run."""
        import ray

        sent, tries = self._sent(order.folder), 2
        while True:
            chosen = min(range(len(self.actors)), key=self.busy.__getitem__)
            actor = self.actors[chosen]
            self.busy[chosen] += 1
            try:
                answer: str = await actor.run.remote(order.model_dump_json(), sent)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as lost:
                self._replace(chosen, actor)
                tries -= 1
                if tries == 0:
                    return _lost(order, lost)
                continue
            finally:
                self.busy[chosen] -= 1
            if answer.startswith(BUDGET_SPENT):
                raise BudgetExceeded(answer.removeprefix(BUDGET_SPENT))
            if answer.startswith(REFUSED):
                why = answer.removeprefix(REFUSED)
                raise DefinitionError(f"a Ray worker would not load machine {order.run.machine!r}: {why}")
            return Run.model_validate_json(answer)

    def close(self) -> None:
        """Leave the cluster (its runners end with this driver) and remove the shipped folder."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        self.actors, self.busy = [], []
        if self.shipped is not None:
            shutil.rmtree(self.shipped, ignore_errors=True)
            self.shipped = None


def _unreachable(address: str | None, why: str) -> BadInputError:
    return BadInputError(
        f"cannot reach the Ray cluster at {address or 'RAY_ADDRESS'} ({why})",
        fixes=[Fix("ray_address", "HOST:PORT", "(the head's address, as its start printed it)")],
    )


def _reachable(address: str | None, timeout_s: float = 5.0) -> None:
    """Refuse at once a head that does not accept connections (Ray itself waits minutes, then exits)."""
    if not address or address == "auto" or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as error:
        raise _unreachable(address, str(error) or type(error).__name__) from None


def _lost(order: RunOrder, error: Exception) -> Run:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    why = f"the Ray worker making this run was lost, and so was its one retry ({first})"
    return order.run.model_copy(update={"status": "error", "error": why})


def _packed(folder: Path) -> bytes:
    """``folder`` as a gzipped tar, leaving behind what ``_ship`` leaves."""

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        left = set(LEFT_BEHIND) & set(Path(info.name).parts) or info.name.endswith(".pyc")
        return None if left else info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname="machines", filter=kept)
    return buffer.getvalue()


__all__ = ["RayExecutor"]
