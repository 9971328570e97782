"""The import graph of the installed package, read from the source (nothing is imported): every module's
imports of other modules of ``machine``, lazy ones (inside functions) and typing ones (inside ``if
TYPE_CHECKING:``) told apart, and the names imported from them."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = {
    "machine": "machine",
    "server": "machine.server",
    "clients": "machine.clients",
    "sandboxes": "machine.sandboxes",
    "machinist": "machine.machinist",
    "dashboard": "machine.dashboard",
}
"""The folders pyproject.toml maps into the ``machine`` package."""


@dataclass
class Module:
    name: str
    path: Path
    imports: set[str] = field(default_factory=set)
    """Modules of the package it imports at module level."""
    lazy: set[str] = field(default_factory=set)
    """Modules of the package it imports inside a function."""
    typing: set[str] = field(default_factory=set)
    """Modules of the package it imports only for the type checker, inside ``if TYPE_CHECKING:``."""
    names: set[str] = field(default_factory=set)
    """What it takes from the package's modules by ``from x import y``, as ``x.y``, modules included."""


def modules() -> dict[str, Module]:
    """Every module of the package, by dotted name, with its imports resolved. Read once a process (the
    layer and naming tests both read it as they are collected), each caller getting its own copy."""
    return {
        name: replace(m, imports=set(m.imports), lazy=set(m.lazy), typing=set(m.typing), names=set(m.names))
        for name, m in _graph().items()
    }


@functools.cache
def _graph() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for folder, dotted in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(REPO / folder).with_suffix("").parts if p != "__init__"]
            name = ".".join([dotted, *parts])
            found[name] = Module(name, path)
    for module in found.values():
        _read(module, found)
    return found


def _read(module: Module, known: dict[str, Module]) -> None:
    tree = ast.parse(module.path.read_text(encoding="utf-8"))
    package = module.name if module.path.name == "__init__.py" else module.name.rsplit(".", 1)[0]
    for node, typing, lazy in _imports(tree.body, typing=False, lazy=False):
        targets = _targets(node, package)
        hits = {t for t in targets if t in known and t != module.name}
        kind = module.typing if typing else module.lazy if lazy else module.imports
        kind.update(hits)
        if isinstance(node, ast.ImportFrom) and (base := _base(node, package)) in known:
            module.names.update(f"{base}.{alias.name}" for alias in node.names)


def _imports(
    body: list[ast.stmt], *, typing: bool, lazy: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """The import statements in ``body`` and in the statements nested in it, each with whether it lies in the
    body of an ``if TYPE_CHECKING:`` and whether inside a function. Only statements can import, so only
    statement bodies are walked, not expressions (a walk of every node of every module made the graph
    cost a second of each test collection)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, typing, lazy
            continue
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _imports(node.body, typing=True, lazy=inner)
            yield from _imports(node.orelse, typing=typing, lazy=inner)
            continue
        for field_name in ("body", "orelse", "finalbody"):
            statements = getattr(node, field_name, None)
            if isinstance(statements, list):
                yield from _imports(statements, typing=typing, lazy=inner)
        for holder in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            yield from _imports(holder.body, typing=typing, lazy=inner)


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = _base(node, package)
    return {base, *(f"{base}.{alias.name}" for alias in node.names)}


def _base(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` reads from, relative levels resolved against ``package``."""
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def owner(name: str, packages: list[str]) -> str | None:
    """The longest of ``packages`` that ``name`` is or lies inside."""
    inside = [p for p in packages if name == p or name.startswith(p + ".")]
    return max(inside, key=len) if inside else None
