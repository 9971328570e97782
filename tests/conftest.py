"""Puts ``tests/`` on ``sys.path`` so tests can import the shared helpers beside them (``hosts``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
