"""docs/hosts.md: the MCP clients it shows, over stdio and over HTTP against the server it starts."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from helpers.doc_pages import run_page


@pytest.mark.slow
def test_the_clients_of_the_hosts_page_run(tmp_path: Path) -> None:
    token = secrets.token_urlsafe(32)
    outcomes = run_page("docs/hosts.md", tmp_path, env={"MACHINE_SERVER_TOKEN": token})
    stdio, http, author = (o for o in outcomes if o.block.lang == "python")
    assert "rehearse" in stdio.output and "False" in stdio.output, stdio.describe()
    assert "red" in http.output and "signoff" in http.output, http.describe()
    assert author.output.startswith("False dev/edge ["), author.describe()  # specialize, its author scripted
