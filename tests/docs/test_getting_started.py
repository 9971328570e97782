"""docs/getting-started.md, the walk through, every command run in order in one workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_every_block_of_getting_started_runs(tmp_path: Path) -> None:
    outcomes = run_page("docs/getting-started.md", tmp_path)
    assert len([o for o in outcomes if o.block.lang == "sh"]) >= 10
