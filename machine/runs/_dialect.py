"""How one SQL engine spells what the stores' statements share. The statements are written once
(``_statements``); every way the SQLite store's SQL differs from another store's is a field of a ``Dialect``,
and ``SQLITE`` is the embedded store's (PostgreSQL's is ``machine.clients.postgres``'s ``POSTGRES``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """One engine's words for the shapes the stores' statements share. A ``{path}`` in a template is a
    dotted path into a run's JSON (``scorecard.pass_score``), ``{keys}`` the same path comma-separated."""

    name: str
    param: str
    """A statement's parameter: ``?`` (sqlite3) or ``%s`` (psycopg)."""
    json_param: str
    """A parameter written into a ``data`` column (a record's JSON text), cast where the column is JSON."""
    data: str
    """A row's ``data`` read back as JSON text, ready for ``model_validate_json``."""
    field: str
    """Template: one field of a run's JSON as SQL text (a string field compares equal to a parameter; a
    JSON null or a missing field is SQL NULL)."""
    number: str
    """Template: one numeric field of a run's JSON as a float (NULL when absent)."""
    fields: str
    """Template: several fields of a run's JSON as the text of one JSON array, ``{each}`` the fields, each
    spelled by ``each``: one parse of the row however many fields are read."""
    each: str
    """Template: one field inside ``fields``."""
    values_of: str
    """Template: the values of a JSON object in a run (a scorecard's criteria) as rows with a ``value``
    column, for a correlated subquery."""
    items_of: str
    """Template: the items of a JSON array in a run (its tags) as rows with a ``value`` column."""
    item_field: str
    """Template: a field (``{key}``) of one ``value`` row, as SQL text."""
    item_number: str
    """Template: a numeric field (``{key}``) of one ``value`` row, as a float."""
    holds: str
    """The condition that a run's JSON text holds a parameter's text, as the SQLite store keeps the text
    (no space after a colon or between keys): a cheap superset the caller filters."""
    marked: str
    """The condition that a run may carry a person's mark, given as ``mark``: a superset decided before
    any run is parsed."""
    mark: str
    """Template: the parameter of ``marked`` for a mark's kind, ``{kind}`` the kind as a JSON string."""
    keeps_subquery_order: bool
    """Whether rows come out of a subquery in its order: SQLite keeps it, so a page of the newest runs
    needs no second sort (and makes none); PostgreSQL promises nothing, so a page sorts its rows again."""

    def path(self, template: str, path: str) -> str:
        """``template`` for one dotted ``path`` into a run's JSON."""
        return template.format(path=path, keys=path.replace(".", ","))

    def json_field(self, path: str) -> str:
        """``field`` for ``path``."""
        return self.path(self.field, path)

    def json_number(self, path: str) -> str:
        """``number`` for ``path``."""
        return self.path(self.number, path)

    def json_fields(self, paths: Sequence[str]) -> str:
        """``fields`` for ``paths``, in their order."""
        return self.fields.format(each=", ".join(self.path(self.each, p) for p in paths))


SQLITE = Dialect(
    name="sqlite",
    param="?",
    json_param="?",
    data="data",
    field="json_extract(data, '$.{path}')",
    number="json_extract(data, '$.{path}')",
    fields="json_extract(data, {each})",
    each="'$.{path}'",
    values_of="json_each(data, '$.{path}')",
    items_of="json_each(data, '$.{path}')",
    item_field="json_extract(value, '$.{key}')",
    item_number="(1.0 * json_extract(value, '$.{key}'))",
    holds="instr(data, ?) > 0",
    marked="instr(data, ?) > 0",
    mark='"kind":{kind}',
    keeps_subquery_order=True,
)
"""The embedded store's dialect: JSON kept as text, read with SQLite's JSON functions."""


__all__ = ["SQLITE", "Dialect"]
