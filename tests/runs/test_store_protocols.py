"""The store's protocols, read from their classes: ``Store`` is exactly its parts, every method of every
part says what it returns, and both stores (SQLite, PostgreSQL) have every method with its parameters."""

from __future__ import annotations

import inspect

import pytest

from machine.clients.postgres import PostgresStore
from machine.runs import SQLiteStore, Store
from machine.runs.storage import STORE_PROTOCOLS


def methods(protocol: type) -> dict[str, object]:
    """The public methods a protocol itself declares."""
    return {
        name: value
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def every_method() -> dict[str, object]:
    """The methods of ``Store``, from all its parts."""
    found: dict[str, object] = {}
    for part in STORE_PROTOCOLS:
        found.update(methods(part))
    return found


def test_store_is_the_union_of_its_parts() -> None:
    assert all(part in Store.__mro__ for part in STORE_PROTOCOLS)
    assert methods(Store) == {}, "a method of Store belongs in one of its parts"
    seen: dict[str, str] = {}
    for part in STORE_PROTOCOLS:
        for name in methods(part):
            assert name not in seen, f"{name} is in both {seen[name]} and {part.__name__}"
            seen[name] = part.__name__
    assert len(seen) >= 27


@pytest.mark.parametrize("protocol", [Store, *STORE_PROTOCOLS], ids=lambda p: p.__name__)
def test_every_store_protocol_and_method_is_documented(protocol: type) -> None:
    assert (protocol.__doc__ or "").strip(), f"{protocol.__name__} has no docstring"
    bare = [name for name, method in methods(protocol).items() if not (inspect.getdoc(method) or "").strip()]
    assert not bare, f"{protocol.__name__} methods without a docstring: {bare}"


@pytest.mark.parametrize("store", [SQLiteStore, PostgresStore], ids=lambda s: s.__name__)
def test_each_store_has_every_method_of_store_with_its_parameters(store: type) -> None:
    for name, declared in every_method().items():
        made = getattr(store, name, None)
        assert callable(made), f"{store.__name__} has no {name}"
        wanted = inspect.signature(declared).parameters  # type: ignore[arg-type]
        given = inspect.signature(made).parameters
        expected = [(p.name, p.kind, p.default) for p in wanted.values()]
        assert [(p.name, p.kind, p.default) for p in given.values()] == expected, f"{store.__name__}.{name}"
