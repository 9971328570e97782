"""docs/scaling.md against a real PostgreSQL server on loopback: its suite stores runs there, ``machine runs``
reads them back, and the copy moves a workspace's own runs into it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.doc_pages import run_page
from helpers.postgres import fresh_schema

PAGE_URL = "postgresql://machine@127.0.0.1:5432/runs"


@pytest.mark.slow
def test_the_scaling_page_runs(tmp_path: Path, postgres_url: str) -> None:
    shared = fresh_schema(postgres_url)
    outcomes = run_page("docs/scaling.md", tmp_path, substitutions={PAGE_URL: f"'{shared}'"})
    shared_suite, copy = (o for o in outcomes if o.block.lang == "sh")
    assert "red: 17 runs" in shared_suite.output and len(shared_suite.output.splitlines()) > 3, (
        shared_suite.describe()
    )
    said = "copied 17 runs, 1 suite, 0 chat sessions and 1 spending-log line from .machine/store.db to"
    assert said in copy.output, copy.describe()
