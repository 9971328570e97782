"""What a run's tools act on: the protocol every sandbox meets (``machine.sandboxes`` has the local one)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol


class Sandbox(Protocol):
    path: Path
    """The run's own directory on the host."""

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
