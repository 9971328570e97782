"""A PostgreSQL password never printed: ``mask_passwords`` hides every form libpq reads (a URL's userinfo,
``password=`` in its query however its name is escaped, a key=value connection string with quoted and
escaped values) and nothing else; a key=value string is a PostgreSQL store, not a SQLite file; and the
store names itself masked when the server cannot be reached (an unused loopback port) or libpq cannot
read the location at all."""

from __future__ import annotations

import pytest

from machine.clients.postgres import PostgresStore
from machine.errors import StoreError
from machine.runs import is_postgres, mask_passwords

FORMS = [
    ("postgresql://bob:hunter22@127.0.0.1:1/runs", "postgresql://bob:***@127.0.0.1:1/runs"),
    ("postgresql://bob@127.0.0.1:1/runs?password=hunter22", "postgresql://bob@127.0.0.1:1/runs?password=***"),
    (
        "postgres://bob@127.0.0.1:1/runs?sslmode=disable&pass%77ord=hunter22&connect_timeout=2",
        "postgres://bob@127.0.0.1:1/runs?sslmode=disable&pass%77ord=***&connect_timeout=2",
    ),
    (
        "host=127.0.0.1 port=1 password=hunter22 dbname=runs",
        "host=127.0.0.1 port=1 password=*** dbname=runs",
    ),
    (
        r"host=127.0.0.1 port=1 password = 'hun ter\'22' dbname=runs",
        "host=127.0.0.1 port=1 password = *** dbname=runs",
    ),
    ("postgresql://bob:hun@ter?22#x@127.0.0.1:1/runs", "postgresql://bob:***@127.0.0.1:1/runs"),
]


@pytest.mark.parametrize(("location", "shown"), FORMS)
def test_every_password_form_libpq_reads_is_masked(location: str, shown: str) -> None:
    said = mask_passwords(f"error: the store {location} cannot be used")
    assert said == f"error: the store {shown} cannot be used"
    assert "hun" not in said and "22" not in said.replace("127.0.0.1", "")


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://machine@127.0.0.1:5432/postgres?options=-csearch_path%3Dt_1",
        "the store .machine/store.db is damaged; see http://localhost:8080/x and bob@example.com",
        "the password field; host=db dbname=runs",
    ],
)
def test_text_without_a_password_is_left_as_it_was(text: str) -> None:
    assert mask_passwords(text) == text


def test_a_key_value_connection_string_is_a_postgres_store_not_a_file() -> None:
    assert is_postgres("host=db dbname=runs") and is_postgres(" dbname = runs host=db")
    assert not any(is_postgres(p) for p in ("runs.db", "./host=x.db", "/tmp/store.db"))


@pytest.mark.parametrize(("location", "shown"), FORMS[:5])
def test_a_server_it_cannot_reach_names_the_store_masked(location: str, shown: str) -> None:
    with pytest.raises(StoreError) as refused:
        PostgresStore(location)
    said = str(refused.value)
    assert f"the store {shown} cannot be used" in said and "hun" not in said
    assert "check that the server is running" in said


def test_a_location_libpq_cannot_read_is_refused_without_quoting_it() -> None:
    """libpq's own words would quote the unescaped password ('unexpected spaces found in "hun ter"')."""
    with pytest.raises(StoreError) as refused:
        PostgresStore("postgresql://bob:hun ter22@127.0.0.1:1/runs")
    said = str(refused.value)
    assert said.startswith("the store postgresql://bob:***@127.0.0.1:1/runs is not a location PostgreSQL")
    assert "hun" not in said and "ter22" not in said
