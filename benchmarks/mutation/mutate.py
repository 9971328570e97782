"""Mutation testing of the security-critical modules with mutmut: for each module, how many of the mutants
mutmut made the tests killed, and which survived.

mutmut names each mutant after the module it reads from the file's path and puts its mutated copy first on
``sys.path``. This project's folders are not laid out as its modules are (pyproject.toml maps
``machine.sandboxes`` to ``sandboxes/``, ``machine.clients`` to ``clients/``, ...), so the script stages a
copy laid out as installed: ``build/mutate/src/machine/`` with ``server/``, ``clients/``, ``sandboxes/`` and
``machinist/`` inside it, ``tests/`` and ``pyproject.toml`` beside it. mutmut runs there with the
``[tool.mutmut]`` settings of pyproject.toml (which modules, which tests), and the tests import the mutated
``machine`` ahead of the editable install. Where only some functions of a module guard the property
(``LocalSandbox``'s resolver, the MCP server's token checks), the staged copy marks the others
``# pragma: no mutate block``; the source tree is never touched.

    .venv/bin/python benchmarks/mutation/mutate.py [--max-children N] [--diffs] [MODULE ...]

Naming modules (``machine.budget._budget``) mutates only those, for a quick figure after a change to one.

``make mutate`` installs mutmut (the ``mutate`` extra) and runs this. Target: every mutant killed, or the
survivors named here and judged equivalent. Asserts nothing; exits non-zero only when mutmut itself fails.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE = ROOT / "build" / "mutate"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache")

SCOPES: dict[str, tuple[str, ...]] = {
    "src/machine/sandboxes/_local.py": (
        "LocalSandbox.__init__",
        "LocalSandbox.create",
        "LocalSandbox.resolve",
        "LocalSandbox.display",
    ),
    "src/machine/server/serve.py": (
        "StaticTokenVerifier.__init__",
        "StaticTokenVerifier.verify_token",
        "token_from_env",
    ),
}
"""Modules where only these functions are mutated (the rest of the module is not what is being tested)."""

STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
}
"""mutmut's exit codes by what they mean (its own table, for the ones a run here gives)."""


def package_dirs() -> dict[str, str]:
    """Each package of the distribution and the folder it is built from, parents first."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    mapped: dict[str, str] = setuptools.get("package-dir", {})
    return dict(sorted(mapped.items(), key=lambda item: item[0].count(".")))


def stage() -> None:
    """``build/mutate``: the package as installed under ``src/``, the tests, and pyproject.toml."""
    shutil.rmtree(STAGE, ignore_errors=True)
    for package, folder in package_dirs().items():
        target = STAGE / "src" / package.replace(".", "/")
        shutil.copytree(ROOT / folder, target, ignore=IGNORED, dirs_exist_ok=True)
    shutil.copytree(ROOT / "tests", STAGE / "tests", ignore=IGNORED)
    shutil.copy2(ROOT / "pyproject.toml", STAGE / "pyproject.toml")
    for relative, kept in SCOPES.items():
        path = STAGE / relative
        path.write_text(only_functions(path.read_text("utf-8"), set(kept)), "utf-8")


def only_functions(source: str, kept: set[str]) -> str:
    """``source`` with ``# pragma: no mutate block`` ending the header of every function (``name`` or
    ``Class.name``) not in ``kept``, so mutmut mutates only those."""
    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for function in inner:
            defined = isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            if defined and prefix + function.name not in kept:
                index = header_end(lines, function)
                lines[index] = lines[index].rstrip("\n") + "  # pragma: no mutate block\n"
    return "".join(lines)


def header_end(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The index of the line that ends ``function``'s ``def ...:`` header, where a trailing pragma applies."""
    first_body = function.body[0].lineno - 1
    if first_body == function.lineno - 1:
        return first_body  # a one-line function
    index = first_body - 1
    while index > function.lineno - 1 and (not lines[index].strip() or lines[index].lstrip().startswith("#")):
        index -= 1
    return index


def mutated_modules() -> list[str]:
    """The files ``[tool.mutmut] only_mutate`` names, as paths inside the staged copy."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return list(settings["only_mutate"])


def figures(modules: list[str]) -> list[tuple[str, Counter[str], list[str]]]:
    """Per module: the count of mutants by outcome, and the names of the survivors."""
    found = []
    for relative in modules:
        meta = STAGE / "mutants" / (relative + ".meta")
        codes: dict[str, int | None] = {}
        if meta.exists():
            codes = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
        outcomes = Counter(
            STATUS.get(code, "not checked" if code is None else "suspicious") for code in codes.values()
        )
        survivors = sorted(name for name, code in codes.items() if STATUS.get(code) == "survived")
        found.append((relative, outcomes, survivors))
    return found


def report(found: list[tuple[str, Counter[str], list[str]]], diffs: bool) -> None:
    print(f"\n{'module':<42} {'killed':>7} {'made':>5} {'killed %':>9}  other")
    total_killed = total_made = 0
    for relative, outcomes, _ in found:
        made = sum(outcomes.values())
        killed = outcomes["killed"] + outcomes["timeout"]
        total_killed, total_made = total_killed + killed, total_made + made
        other = ", ".join(
            f"{n} {what}" for what, n in sorted(outcomes.items()) if what not in ("killed", "timeout")
        )
        share = f"{100 * killed / made:.1f}" if made else "-"
        print(f"{relative.removeprefix('src/'):<42} {killed:>7} {made:>5} {share:>9}  {other}")
    share = f"{100 * total_killed / total_made:.1f}" if total_made else "-"
    print(f"{'all':<42} {total_killed:>7} {total_made:>5} {share:>9}  target: 100 (or named, equivalent)")
    for _, _, survivors in found:
        for name in survivors:
            print(f"survived  {name}")
            if diffs:
                shown = subprocess.run(
                    [sys.executable, "-m", "mutmut", "show", name], cwd=STAGE, capture_output=True, text=True
                )
                print(shown.stdout.rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--max-children", type=int, default=os.cpu_count() or 1, help="mutants tested at once"
    )
    parser.add_argument("--diffs", action="store_true", help="print each surviving mutant's diff")
    parser.add_argument("modules", nargs="*", help="only these of the modules, e.g. machine.budget._budget")
    args = parser.parse_args()
    modules = mutated_modules()
    if args.modules:
        chosen = {"src/" + name.replace(".", "/") + ".py" for name in args.modules}
        if unknown := chosen - set(modules):
            parser.error(f"not among [tool.mutmut] only_mutate: {', '.join(sorted(unknown))}")
        modules = [m for m in modules if m in chosen]
    stage()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)]
    command += [name + ".*" for name in args.modules]  # mutmut's mutant names start with the module's
    print("==", " ".join(command), f"(in {STAGE.relative_to(ROOT)})", flush=True)
    ran = subprocess.run(command, cwd=STAGE, env=env, check=False)
    report(figures(modules), args.diffs)
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main())
