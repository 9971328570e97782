"""A PostgreSQL password never printed by the command line, in each form libpq reads (userinfo, the
query's ``password=``, a key=value string with a quoted value): not in the error of a store that cannot
be reached (an unused loopback port), not in ``store copy``'s refusal, and not in its success line or
``--json`` after a real copy into a throw-away PostgreSQL (which trusts loopback, so any password does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import Result
from helpers.cli_workspace import WorkspaceFolder
from helpers.postgres import fresh_schema

from machine.runs import Run, SQLiteStore, Timings

Invoke = Callable[..., Result]
SECRET = "hunter-22"
UNREACHABLE = [
    (f"postgresql://bob:{SECRET}@127.0.0.1:1/runs", "postgresql://bob:***@127.0.0.1:1/runs"),
    (
        f"postgresql://bob@127.0.0.1:1/runs?password={SECRET}",
        "postgresql://bob@127.0.0.1:1/runs?password=***",
    ),
    (
        rf"host=127.0.0.1 port=1 user=bob password='{SECRET} x\'y' dbname=runs",
        "host=127.0.0.1 port=1 user=bob password=*** dbname=runs",
    ),
]


@pytest.mark.parametrize(("location", "shown"), UNREACHABLE)
def test_a_store_it_cannot_reach_is_named_without_its_password(
    invoke: Invoke, ws: WorkspaceFolder, monkeypatch: pytest.MonkeyPatch, location: str, shown: str
) -> None:
    monkeypatch.setenv("MACHINE_STORE", location)
    done = invoke("runs", "greet", "--workspace", ws.root)
    assert done.exit_code == 2
    assert f"error: the store {shown} cannot be used" in done.stderr
    assert SECRET not in done.output + done.stderr


@pytest.mark.parametrize(("location", "shown"), UNREACHABLE)
def test_store_copy_refuses_the_same_store_without_its_password(
    invoke: Invoke, location: str, shown: str
) -> None:
    done = invoke("store", "copy", "--from", location, "--to", location)
    assert done.exit_code == 2
    assert f"the same store: name two stores, not {shown} twice" in done.stderr
    assert SECRET not in done.output + done.stderr


def _forms(url: str) -> list[tuple[str, str]]:
    """A fresh schema's location with a password in each form, and how it is shown."""
    schema = fresh_schema(url)
    base, query = schema.split("?")
    port = base.rsplit(":", 1)[1].split("/")[0]
    search = query.removeprefix("options=").replace("%3D", "=")
    settings = f"host=127.0.0.1 port={port} user=machine dbname=postgres options='{search}'"
    return [
        (
            base.replace("machine@", f"machine:{SECRET}@") + f"?{query}",
            base.replace("@", ":***@") + f"?{query}",
        ),
        (f"{schema}&password={SECRET}", f"{schema}&password=***"),
        (settings + rf" password='{SECRET} x\'y'", f"{settings} password=***"),
    ]


def test_store_copy_names_both_stores_without_their_passwords(
    invoke: Invoke, postgres_url: str, tmp_path: Path
) -> None:
    source = tmp_path / "store.db"
    started = Timings(started_at=datetime(2026, 1, 1, tzinfo=UTC))
    SQLiteStore(source).put(
        Run(id="r1", machine="greet", model="echo", harness="echo", input="hi", timings=started)
    )
    for n, (location, shown) in enumerate(_forms(postgres_url)):
        done = invoke("store", "copy", "--from", source, "--to", location)
        assert done.exit_code == 0, done.output
        assert f"from {source} to {shown}" in done.stdout and SECRET not in done.output + done.stderr
        back = tmp_path / f"back-{n}.db"
        done = invoke("store", "copy", "--from", location, "--to", back, "--json")
        assert done.exit_code == 0, done.output
        copied = json.loads(done.stdout)
        assert (copied["source"], copied["runs"]) == (shown, 1) and SECRET not in done.output + done.stderr
