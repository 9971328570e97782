"""The layers of the package, read from its imports: a lower layer never imports a higher one, the adapters
build on the core's protocols and records alone, the core meets the adapters in one composition module, the
faces reach the core through ``machine.ops`` and public names, no module imports another package's private
module, and no import cycle exists anywhere (lazy imports and ``TYPE_CHECKING`` ones included)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from helpers.imports import Module, modules, owner

CORE = [
    "machine._lazy",
    "machine.errors",
    "machine.runs",
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
COMPOSITION = "machine.ops._compose"
"""The one core module that imports adapters (by name, when a harness or sandbox is made)."""
ADAPTERS_MAY_IMPORT = ["machine.errors", "machine.runs"]

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


def test_the_core_meets_adapters_only_in_the_composition_module() -> None:
    wrong = [
        f"{module.name} -> {target}"
        for module in GRAPH.values()
        if (_layer(module.name) is not None or module.name == "machine") and module.name != COMPOSITION
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
        allowed = [mine, *ADAPTERS_MAY_IMPORT]
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
