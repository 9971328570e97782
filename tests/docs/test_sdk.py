"""docs/sdk.md: every example is a whole program, and runs (Tinker answered by a local stand-in)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_every_program_of_the_sdk_page_runs(tmp_path: Path) -> None:
    outcomes = run_page("docs/sdk.md", tmp_path, env={"TINKER_API_KEY": "tk-docs-test"})
    assert len(outcomes) == 8 and all(o.returncode == 0 for o in outcomes)
    trained = next(o for o in outcomes if "train(" in o.block.text)
    assert "steps" in trained.output, trained.describe()
    moved = next(o for o in outcomes if "import_runs(" in o.block.text)
    assert "read back: True" in moved.output, moved.describe()
