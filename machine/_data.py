"""The bases of the product's data (runs, reports, plans, prices): pydantic models whose schema is built on
first use, strict or tolerant of unknown fields as each kind of record needs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """The base of the product's data: its schema is built on first use, not on import, so that a command
    pays only for the models it uses (``machine --help`` uses none)."""

    model_config = ConfigDict(defer_build=True)


class Record(Model):
    """Strict plain data: an unknown field is an error."""

    model_config = ConfigDict(extra="forbid")


class Derived(Model):
    """A record with computed fields: its dump carries them, and reading a dump back ignores them.

    Unknown fields are ignored rather than refused here: a validator that dropped only the computed
    ones would make reading a stored run twice as slow."""

    model_config = ConfigDict(extra="ignore")
