"""A run's own working directory under ``.machine/sandboxes/<run-id>``, removed after the run."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path


class LocalSandbox:
    isolated = False
    """Commands are not isolated here; tools that run model-written code must refuse."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, root: Path, run_id: str, files: Mapping[str, str] | None = None) -> LocalSandbox:
        path = root / run_id
        path.mkdir(parents=True, mode=0o700)
        for name, content in (files or {}).items():
            target = (path / name).resolve()
            if not target.is_relative_to(path.resolve()):
                raise ValueError(f"starting file {name!r} lies outside the sandbox")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return cls(path)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
