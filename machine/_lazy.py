"""Packages whose public names resolve on first use (PEP 562): a package maps each name to the module that
defines it, so importing the package imports none of them, and a command pays only for what it uses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def resolver(
    package: str, homes: Mapping[str, str], modules: Collection[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``. ``homes`` maps each public name to its module,
    relative to the package (``._records``), with the name there after a colon where it differs
    (``._local_chat:FORMAT``); the names in ``modules`` are modules themselves (``stats``).
    A name, once resolved, is kept in the package, so it is looked up once."""
    namespace = sys.modules[package].__dict__

    def resolve(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path, _, original = home.partition(":")
        module = importlib.import_module(path, package)
        value = module if name in modules else getattr(module, original or name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return resolve, names
