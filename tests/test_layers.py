"""The layers of the package, read from its imports: a lower layer never imports a higher one, the adapters
build on the core's protocols and records alone, the core meets the adapters in one composition module, and
no import cycle exists anywhere (lazy imports included)."""

from __future__ import annotations

import subprocess
import sys

from helpers.imports import Module, modules, owner

CORE = [
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
FACES = ["machine.cli", "machine.server", "machine.machinist"]
COMPOSITION = "machine.ops._compose"
"""The one core module that imports adapters (by name, when a harness or sandbox is made)."""
ADAPTERS_MAY_IMPORT = ["machine.errors", "machine.runs"]
TRAINERS = ["machine.clients.local_trainer"]
"""Adapters that implement the Trainer protocol: they may import it, and its records, from machine.learn."""
TRAINERS_MAY_IMPORT = ["machine.learn"]

GRAPH = modules()


def _layer(name: str) -> int | None:
    found = owner(name, CORE)
    return None if found is None else CORE.index(found)


def _all_imports(module: Module) -> set[str]:
    return module.imports | module.lazy


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
        if owner(module.name, TRAINERS) is not None:
            allowed += TRAINERS_MAY_IMPORT
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


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components over every import, lazy ones too; a package importing its
    own modules (its ``__init__``) is not a cycle of ideas."""
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
        for target in _all_imports(GRAPH[name]):
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
    assert not cycles, f"import cycles: {cycles}"


def _of_ideas(component: list[str]) -> bool:
    return any(
        not (a.startswith(b + ".") or b.startswith(a + ".")) for a in component for b in component if a != b
    )


def test_no_lazy_import_between_core_modules() -> None:
    """The core is imported whole when ``machine`` is: a lazy import of one core module by another saves
    no start-up time, so it could only be dodging a cycle."""
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
