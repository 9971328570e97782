"""README.md, run top to bottom as a new reader would, in a workspace of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page

NEWEST_RUN = (
    """$(machine runs red --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')"""
)


@pytest.mark.slow
def test_every_block_of_the_readme_runs(tmp_path: Path) -> None:
    outcomes = run_page(
        "README.md",
        tmp_path,
        refusals={
            "machine commit red": "did not pass the promotion gate",
            "machine revert red": "no version that was live before",
        },
        substitutions={"<run-id>": NEWEST_RUN},
    )
    refused = [command for o in outcomes for _, command in o.failed]
    assert any("machine commit red" in c for c in refused) and any("machine revert red" in c for c in refused)
    commands = next(o for o in outcomes if "machine suite red --trials 3 -v" in o.block.text)
    assert "red: " in commands.output and "pass rate" in commands.output, commands.describe()
    assert not [o for o in outcomes if o.block.lang == "sh" and o.returncode != 0 and not o.failed]
