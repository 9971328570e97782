"""The layers of the package, read from its imports: a lower layer never imports a higher one, the adapters
build on the core's protocols and records alone, the core never imports an adapter (it finds each through
its entry point) nor names one, every backend in ``clients/`` is registered through that one mechanism,
the faces reach the core through ``machine.ops`` and public names, no module imports another package's
private module, and no import cycle exists anywhere (lazy imports and ``TYPE_CHECKING`` ones included)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import typing
from collections.abc import Callable
from typing import Any

from helpers.imports import Module, modules, owner

CORE = [
    "machine._lazy",
    "machine._data",
    "machine.errors",
    "machine._backends",
    "machine.budget",
    "machine.runs",
    "machine.training",
    "machine.grade",
    "machine.spec",
    "machine.workspace",
    "machine.measure",
    "machine.versions",
    "machine.learn",
    "machine.ops",
]
"""The core's layers, lowest first: each may import only itself and the layers before it."""
ADAPTERS = ["machine.clients", "machine.sandboxes"]
FACES = ["machine.cli", "machine.server", "machine.machinist", "machine.dashboard"]
ADAPTERS_MAY_IMPORT = [
    "machine._data",
    "machine.errors",
    "machine.budget",
    "machine.runs",
    "machine.training",
]
ROOMS_MAY_IMPORT = {
    "machine.clients.ray": ["machine.spec", "machine.workspace", "machine.ops"],
}
"""The one room that goes further: the Ray executor's runner runs on each worker, where it opens the same
workspace (``machine.ops.open_workspace``), loads and trusts machines (``machine.spec``) and takes the
executor's run orders (``machine.workspace``), as a face would. Nothing in the core imports it (the
``ray`` executor is found by its entry point), so no cycle comes of it."""

GRAPH = modules()
PACKAGES = {name for name, module in GRAPH.items() if module.path.name == "__init__.py"}


def _layer(name: str) -> int | None:
    found = owner(name, CORE)
    return None if found is None else CORE.index(found)


def _all_imports(module: Module) -> set[str]:
    """Everything ``module`` depends on: a type it imports only for the type checker is a dependency too."""
    return module.imports | module.lazy | module.typing


def _home(target: str) -> str | None:
    """The package a private module or name belongs to, None for a public one: what lies before its first
    ``_name`` part (``machine.spec`` for ``machine.spec._book`` and ``machine.spec._book.Book``), or the
    package of the module it lies in (``machine.runs`` for a ``_name`` of a public ``machine.runs.x``)."""
    parts = target.split(".")
    first = next((i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")), None)
    if first is None:
        return None
    prefix = ".".join(parts[:first])
    return prefix if prefix in PACKAGES else prefix.rsplit(".", 1)[0]


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _taken(module: Module) -> set[str]:
    """The modules ``module`` imports, and the ``_names`` it takes from them."""
    private = {n for n in module.names if n.rsplit(".", 1)[1].startswith("_") and "__" not in n}
    return _all_imports(module) | private


def test_every_module_is_placed() -> None:
    placed = CORE + ADAPTERS + FACES
    loose = [name for name in GRAPH if name != "machine" and owner(name, placed) is None]
    assert not loose, f"modules outside every layer: {loose}"


def test_a_lower_layer_never_imports_a_higher_one() -> None:
    wrong = []
    for module in GRAPH.values():
        mine = _layer(module.name)
        if mine is None:
            continue
        for target in _all_imports(module):
            theirs = _layer(target)
            if theirs is not None and theirs > mine:
                wrong.append(f"{module.name} -> {target}")
            if owner(target, FACES) is not None:
                wrong.append(f"{module.name} -> {target} (a face)")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_no_backend_module_in_the_core() -> None:
    """The core imports no adapter, not even where it composes a workspace: harnesses, trainers, stores
    and executors are found by name in their registries, the rest as ``machine.parts``, by entry point."""
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        if _layer(module.name) is not None or module.name == "machine"
        for target in _all_imports(module)
        if owner(target, ADAPTERS) is not None
    ]
    assert not wrong, "core modules importing adapters:\n" + "\n".join(sorted(wrong))


def test_adapters_import_only_the_cores_protocols_and_records() -> None:
    wrong = []
    for module in GRAPH.values():
        mine = owner(module.name, ADAPTERS)
        if mine is None:
            continue
        room = owner(module.name, list(ROOMS_MAY_IMPORT))
        allowed = [mine, *ADAPTERS_MAY_IMPORT, *ROOMS_MAY_IMPORT.get(room or "", [])]
        for target in _all_imports(module):
            if owner(target, allowed) is None:
                wrong.append(f"{module.name} -> {target}")
    assert not wrong, "adapters importing beyond machine.errors and machine.runs:\n" + "\n".join(
        sorted(wrong)
    )


def test_faces_do_not_import_each_other() -> None:
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        if (mine := owner(module.name, FACES)) is not None
        for target in _all_imports(module)
        if (theirs := owner(target, FACES)) is not None and theirs != mine
    ]
    assert not wrong, "faces importing one another:\n" + "\n".join(sorted(wrong))


def test_faces_reach_the_core_through_ops_and_public_names() -> None:
    """The CLI, the MCP server and the machinist's machines take from the core ``machine.ops`` and what
    the core's packages export: never a private module or name, ``machine``'s own included."""
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        if owner(module.name, FACES) is not None
        for target in _taken(module)
        if owner(target, [*ADAPTERS, *FACES]) is None and _home(target) is not None
    ]
    assert not wrong, "faces importing the core's private modules or names:\n" + "\n".join(sorted(wrong))


def test_no_import_of_another_packages_private_module() -> None:
    """A private module (or a ``_name``) is its package's: only modules inside that package, its
    subpackages included, import it; any other imports the name its package exports."""
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        for target in _taken(module)
        if (home := _home(target)) is not None and not _inside(module.name, home)
    ]
    assert not wrong, "imports of another package's private module or name:\n" + "\n".join(sorted(wrong))


def _cycles(imports: Callable[[Module], set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components over ``imports``; a package importing its own modules (its
    ``__init__``) is not a cycle of ideas."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(name: str) -> None:
        index[name] = low[name] = counter[0]
        counter[0] += 1
        stack.append(name)
        on_stack.add(name)
        for target in imports(GRAPH[name]):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == name:
                    break
            if len(component) > 1 and _of_ideas(component):
                cycles.append(sorted(component))

    for name in GRAPH:
        if name not in index:
            visit(name)
    return cycles


def test_no_import_cycle() -> None:
    """No cycle of the imports that run: at module level or inside functions."""
    cycles = _cycles(lambda module: module.imports | module.lazy)
    assert not cycles, f"import cycles: {cycles}"


def test_no_cycle_needs_a_type_checking_import() -> None:
    """An import under ``if TYPE_CHECKING:`` that closes a cycle hides the cycle from the interpreter,
    not from the reader: the shared type belongs in a module of its own below both."""
    cycles = _cycles(_all_imports)
    assert not cycles, f"import cycles through TYPE_CHECKING imports: {cycles}"


def _of_ideas(component: list[str]) -> bool:
    return any(
        not (a.startswith(b + ".") or b.startswith(a + ".")) for a in component for b in component if a != b
    )


def test_no_lazy_import_between_core_modules() -> None:
    """Start-up is kept fast in one place, the packages' ``__getattr__`` (``machine._lazy``): an import of
    one core module by another inside a function could only be dodging a cycle."""
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        if _layer(module.name) is not None or owner(module.name, FACES) is not None
        for target in module.lazy
        if _layer(target) is not None
    ]
    assert not wrong, "lazy imports of core modules:\n" + "\n".join(sorted(wrong))


def test_every_module_imports_in_a_fresh_interpreter_in_dependency_order() -> None:
    order: list[str] = []
    seen: set[str] = set()

    def place(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for target in sorted(GRAPH[name].imports):
            place(target)
        order.append(name)

    for name in sorted(GRAPH):
        place(name)
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run(
        [sys.executable, "-c", script, *order], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]


GROUPS = ["machine.harnesses", "machine.trainers", "machine.stores", "machine.executors"]


def _backend_names() -> set[str]:
    """The names of the backends the adapters register (the core's embedded defaults, the SQLite store
    and the in-process executor, are the core's own to name)."""
    return {
        point.name
        for group in GROUPS
        for point in importlib.metadata.entry_points(group=group)
        if _layer(point.module) is None
    }


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of ``tree``: a module's, a class's, a function's, an attribute's."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def test_no_backend_name_in_the_core() -> None:
    """The core asks the registries what a backend can do (free, replays, serves ``local:`` models, runs
    elsewhere, the default) instead of testing its name: no core module holds a string that is exactly a
    registered backend's name. Docstrings and the words of messages (f-strings) may name one."""
    names = _backend_names()
    wrong = []
    for module in GRAPH.values():
        if _layer(module.name) is None and module.name != "machine":
            continue
        tree = ast.parse(module.path.read_text(encoding="utf-8"))
        skipped = _docstrings(tree) | {
            id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values
        }
        wrong += [
            f"{module.name}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in skipped
        ]
    assert not wrong, "backend names in the core:\n" + "\n".join(sorted(wrong))


NOT_BACKENDS = {"machine.clients.ray._runner:Runner": "the Ray worker's actor, which the ray executor drives"}
"""Classes in ``clients/`` shaped like a backend that are parts of one, not backends chosen by name."""


def _protocols() -> dict[str, Any]:
    from machine.runs import Harness, Store
    from machine.training import Trainer
    from machine.workspace import Executor

    return {"harness": Harness, "trainer": Trainer, "store": Store, "executor": Executor}


def _methods(protocol: Any) -> set[str]:
    return {name for name in typing._get_protocol_attrs(protocol) if callable(getattr(protocol, name, None))}  # type: ignore[attr-defined]


def _backend_classes() -> dict[str, type]:
    """Every class in ``clients/`` that implements a backend protocol's methods, by ``module:Class``."""
    protocols = [_methods(protocol) for protocol in _protocols().values()]
    found = {}
    for name in sorted(GRAPH):
        if owner(name, ["machine.clients"]) is None:
            continue
        for class_name, cls in vars(importlib.import_module(name)).items():
            mine = inspect.isclass(cls) and cls.__module__ == name and not class_name.startswith("_")
            if mine and any(all(hasattr(cls, method) for method in methods) for methods in protocols):
                found[f"{name}:{class_name}"] = cls
    return found


def _made() -> set[type]:
    """The classes the registered backends declare they make (``Backend.makes``)."""
    from machine.runs import HARNESSES, STORES
    from machine.training import TRAINERS
    from machine.workspace import EXECUTORS

    made = set()
    for registry in (HARNESSES, TRAINERS, STORES, EXECUTORS):
        for name in registry:
            if registry[name].makes:
                module, _, attribute = registry[name].makes.partition(":")
                made.add(getattr(importlib.import_module(module), attribute))
    return made


def test_every_backend_in_clients_is_registered() -> None:
    """Every harness, trainer, store and executor class in ``clients/`` is made by an entry registered
    through the one mechanism (an entry point of its kind's group), never by a name the core knows."""
    made = _made()
    loose = [name for name, cls in _backend_classes().items() if cls not in made and name not in NOT_BACKENDS]
    assert not loose, f"backends in clients/ no registered entry makes: {loose}"
