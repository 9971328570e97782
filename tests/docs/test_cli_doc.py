"""docs/cli.md, run top to bottom as a new reader would, in a workspace of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_every_block_of_the_cli_page_runs(tmp_path: Path) -> None:
    outcomes = run_page("docs/cli.md", tmp_path)
    ran = [o for o in outcomes if o.block.lang == "sh"]
    assert ran, "docs/cli.md has sh blocks to run"
    assert not [o for o in ran if o.returncode != 0 and not o.failed], [o.describe() for o in ran]
