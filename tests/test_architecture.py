"""Layers point one way: sources -> parsing -> store -> indexing -> retrieval -> answering ->
service -> interfaces. A module may import its own layer or a lower one, never a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "coderag_tui"
LAYERS = {
    "models": 0, "errors": 0, "config": 0, "trust": 0, "paths": 0, "textsafe": 0, "tokens": 0, "__init__": 0,
    "sources": 1, "parsing": 2, "store": 3, "indexing": 4, "retrieval": 5,
    "answering": 6, "review": 6, "service": 7,
    "cli": 8, "mcp_server": 8, "tui": 8, "__main__": 9,
}


def imported_modules(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_layers_point_one_way():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        assert layer in LAYERS, f"{layer} is not placed in a layer"
        for module in imported_modules(path):
            if not module.startswith("coderag_tui."):
                continue
            target = module.split(".")[1]
            if LAYERS.get(target, 0) > LAYERS[layer]:
                problems.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not problems, problems


def test_only_the_tui_imports_textual():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "tui"
        and any(m == "textual" or m.startswith("textual.") for m in imported_modules(path))
    ]
    assert not offenders
