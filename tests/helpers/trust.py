"""What the trust tests check in this very process: which modules were imported from a folder."""

from __future__ import annotations

import sys
from pathlib import Path


def imported_from(folder: Path) -> list[str]:
    """The modules of this process (an in-process server's too) whose file is in ``folder``."""
    return [
        name
        for name, module in list(sys.modules.items())
        if Path(getattr(module, "__file__", None) or "/").resolve().is_relative_to(folder.resolve())
    ]
