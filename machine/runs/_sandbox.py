"""What a run's tools act on: the protocol every sandbox meets, and the factory a workspace makes them
with (``machine.sandboxes`` has the local one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol


class Sandbox(Protocol):
    """A run's own directory, and a way to run commands in it."""

    path: Path
    """The run's own directory on the host."""
    workdir: str
    """Where that directory appears to the commands run in it."""

    @property
    def isolated(self) -> bool:
        """Whether commands are isolated (no network, no user data, an empty environment)."""
        ...

    def resolve(self, relative: str) -> Path:
        """The host path of ``relative``, refusing anything that leads outside the directory."""
        ...

    def display(self, path: Path) -> str:
        """A host path inside the sandbox as the model sees it."""
        ...

    def remove(self) -> None:
        """Remove the directory and everything in it."""
        ...

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout_s: float = ...,
        max_output: int = ...,
        mounts: Sequence[Any] = (),
    ) -> Any:
        """Run a command in the sandbox with a timeout that kills its whole process tree."""
        ...


class Sandboxes(Protocol):
    """Makes the sandboxes of a workspace's runs."""

    def create(self, parent: Path, run_id: str, files: Mapping[str, str]) -> Sandbox:
        """A fresh directory ``parent/run_id`` seeded with ``files``, removed after the run."""
        ...

    def open(self, folder: Path, *, hide: Sequence[str] = ()) -> Sandbox:
        """The person's own ``folder`` (never removed), with the relative paths in ``hide`` hidden."""
        ...

    def for_scratch(self, parent: Path, run_id: str, files: Mapping[str, str]) -> Sandbox:
        """A fresh directory like ``create``'s whose commands work on a copy of it that is capped in size
        and thrown away: for code nobody has read whose only result is what it prints."""
        ...

    def for_library(self, parent: Path, run_id: str, files: Mapping[str, str]) -> Sandbox:
        """A fresh directory like ``create``'s whose commands can run this library's own Python
        (``sys.executable -P -m machine.<module>``), to run code nobody has read as library code would."""
        ...
