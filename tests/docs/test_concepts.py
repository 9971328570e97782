"""docs/concepts.md: its programs run and its excerpts are the files they quote."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_every_block_of_the_concepts_page_runs(tmp_path: Path) -> None:
    outcomes = run_page("docs/concepts.md", tmp_path)
    assert any(o.block.mark == "excerpt" for o in outcomes)
