"""The import graph of the installed package, read from the source (nothing is imported): every module's
imports of other modules of ``machine``, lazy ones (inside functions) and typing ones (inside ``if
TYPE_CHECKING:``) told apart, and the names imported from them."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
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
    """Every module of the package, by dotted name, with its imports resolved."""
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
    typing: set[int] = set()
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing |= {id(n) for statement in node.body for n in ast.walk(statement)}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lazy |= {id(n) for n in ast.walk(node)}
    package = module.name if module.path.name == "__init__.py" else module.name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets = _targets(node, package)
        hits = {t for t in targets if t in known and t != module.name}
        kind = module.typing if id(node) in typing else module.lazy if id(node) in lazy else module.imports
        kind.update(hits)
        if isinstance(node, ast.ImportFrom) and (base := _base(node, package)) in known:
            module.names.update(f"{base}.{alias.name}" for alias in node.names)


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
