"""The size limits every module of the package keeps: one module, one idea, under 400 lines; no function
over 60 lines (from its ``def`` to its last line, decorators aside)."""

from __future__ import annotations

import ast

from helpers.imports import REPO, modules

MODULE_LINES = 400
FUNCTION_LINES = 60


def test_no_module_is_over_the_limit() -> None:
    long = {
        str(m.path.relative_to(REPO)): n
        for m in modules().values()
        if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, f"modules over {MODULE_LINES} lines: {long}"


def test_no_function_is_over_the_limit() -> None:
    long: dict[str, int] = {}
    for module in modules().values():
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > FUNCTION_LINES:
                    long[f"{module.path.relative_to(REPO)}:{node.lineno} {node.name}"] = size
    assert not long, f"functions over {FUNCTION_LINES} lines: {long}"
