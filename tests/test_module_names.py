"""Every module of the package has one name. The folders pyproject.toml maps into ``machine`` refuse to be
imported by their paths: from the repository root, ``import server`` would otherwise load
``server/_results.py`` as a second module beside ``machine.server._results``, with classes of its own that
``isinstance`` tells apart. And the whole package imported as ``machine.*`` loads each file once, so each
class exists once."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from helpers.imports import FOLDERS, REPO, modules

MAPPED = {folder: dotted for folder, dotted in FOLDERS.items() if folder != dotted}
"""The mapped folders and the one name each is imported by: ``server`` is ``machine.server``."""
GRAPH = modules()

REFUSALS = """
import importlib, json, sys
refused = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError as error:
        refused[name] = str(error)
folders = {name.split(".")[0] for name in sys.argv[1:]}
loaded = sorted(name for name in sys.modules if name.split(".")[0] in folders)
print(json.dumps({"refused": refused, "loaded": loaded}))
"""

COPIES = """
import importlib, inspect, json, os, sys
roots = [os.path.join(sys.argv[1], folder) + os.sep for folder in json.loads(sys.argv[2])]
for name in sys.argv[3:]:
    importlib.import_module(name)
names, classes = {}, {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if not path or not any(os.path.realpath(path).startswith(root) for root in roots):
        continue
    path = os.path.realpath(path)
    names.setdefault(path, []).append(name)
    for value in list(vars(module).values()):
        if inspect.isclass(value) and value.__module__ == name:
            classes.setdefault(f"{path}:{value.__qualname__}", set()).add(id(value))
print(json.dumps({
    "names": {path: sorted(found) for path, found in names.items()},
    "classes": {key: len(found) for key, found in classes.items()},
}))
"""


def _run(script: str, *args: str) -> dict[str, Any]:
    """``script`` in a fresh interpreter started in the repository root, which is then first on its
    ``sys.path`` (as for ``python -c`` typed there)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def _by_path(name: str) -> str:
    """The name a module of a mapped folder has when its folder is imported by its path."""
    for folder, dotted in MAPPED.items():
        if name == dotted or name.startswith(dotted + "."):
            return folder + name[len(dotted) :]
    raise AssertionError(f"{name} is in no mapped folder")


def test_the_mapped_folders_refuse_their_paths() -> None:
    mapped = sorted(n for n in GRAPH if any(n == d or n.startswith(d + ".") for d in MAPPED.values()))
    by_path = {_by_path(name): name for name in mapped}
    assert set(MAPPED) <= set(by_path), "every mapped folder is tried by its own name too"
    found = _run(REFUSALS, *sorted(by_path))
    not_refused = sorted(set(by_path) - set(found["refused"]))
    assert not not_refused, f"imported by their paths from the repository root: {not_refused}"
    unhelpful = {
        name: said
        for name, said in found["refused"].items()
        if f"import {MAPPED[name.split('.')[0]]}" not in said
    }
    assert not unhelpful, f"refusals that do not say which name to import: {unhelpful}"
    assert not found["loaded"], f"loaded by their paths although refused: {found['loaded']}"


def test_each_module_is_loaded_once_and_each_class_exists_once() -> None:
    found = _run(COPIES, str(REPO), json.dumps(sorted(FOLDERS)), *sorted(GRAPH))
    twice = {path: names for path, names in found["names"].items() if len(names) > 1}
    assert not twice, f"files loaded as more than one module: {twice}"
    named = {path: names[0] for path, names in found["names"].items()}
    wrong = {
        str(m.path.relative_to(REPO)): named.get(str(m.path.resolve()))
        for m in GRAPH.values()
        if named.get(str(m.path.resolve())) != m.name
    }
    assert not wrong, f"modules loaded under another name than their place in the package: {wrong}"
    copies = sorted(key for key, count in found["classes"].items() if count > 1)
    assert not copies, f"classes that exist more than once: {copies}"
