"""docs/dashboard.md: its suite stores runs, its dashboard serves them, and its script reads the passing
runs and the suites through the JSON endpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_the_dashboard_page_runs(tmp_path: Path) -> None:
    outcomes = run_page("docs/dashboard.md", tmp_path)
    script = next(o for o in outcomes if o.block.lang == "python")
    lines = script.output.splitlines()
    assert len(lines) == 4 and lines[-1] == "1 suites", script.describe()
    assert all(line.endswith(" 1.0") for line in lines[:3]), script.describe()
