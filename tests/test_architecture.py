"""Layers point one way: sources -> parsing -> store -> indexing -> retrieval -> answering ->
service -> interfaces. A module may import its own layer or a lower one, never a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "coderag_tui"
LAYERS = {
    "models": 0, "errors": 0, "config": 0, "trust": 0, "paths": 0, "textsafe": 0, "tokens": 0, "wire": 0, "__init__": 0,
    "sources": 1, "parsing": 2, "store": 3, "indexing": 4, "retrieval": 5,
    "answering": 6, "review": 6, "service": 7, "store_service": 7, "workspace": 7, "client": 7, "client_tools": 7,
    "cli": 8, "mcp_server": 8, "tui": 8, "server": 8, "__main__": 9,
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


SQL_CALLS = frozenset({"execute", "executemany", "executescript", "rows", "rows_in", "scalar", "one", "row"})
SQL_WORDS = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "DROP ", "ALTER ", "WITH ", "PRAGMA ",
             "WHERE ")  # a WHERE appended to a query the store exports (read.UNIT_SELECT + ...)
# Modules whose SQL has not moved into the store yet. Each is listed by name so that the list can
# only shrink: a new module, or a module moved off this list, may not run SQL of its own.
SQL_NOT_YET_IN_STORE = {
    # conversations and citation checks: the answering modules are reworked separately
    "answering/answerer.py",
    # the indexing passes write in bulk inside their own transactions (graph resolution,
    # embedding, skips, the FTS rebuild, the watcher's rename scan)
    "indexing/embedder.py", "indexing/graph.py", "indexing/indexer.py", "indexing/watcher.py",
    # the retrievers' ranked queries (FTS5 MATCH, sqlite-vec KNN, graph expansion)
    "retrieval/common.py", "retrieval/expansion.py", "retrieval/lexical.py", "retrieval/matrix.py",
    "retrieval/refine.py", "retrieval/repo_map.py", "retrieval/search.py", "retrieval/source.py",
    "retrieval/state.py", "retrieval/structural.py", "retrieval/symbols.py", "retrieval/vector.py",
    # the review's caller and callee lookups around a change
    "review/gather.py",
}


def _string_parts(node: ast.AST) -> list[str]:
    """The literal text of a str constant, an f-string or a `+` of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string_parts(node.left) + _string_parts(node.right)
    return []


def sql_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS and node.args):
            text = " ".join(_string_parts(node.args[0])).upper()
            if any(word in text for word in SQL_WORDS):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_store_owns_all_sql():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("store/") or rel in SQL_NOT_YET_IN_STORE:
            continue
        offenders += sql_calls(path)
    assert not offenders, offenders


def test_the_sql_check_sees_sql():
    # the allowlist is only honest while each module on it still runs SQL of its own
    still = {rel for rel in SQL_NOT_YET_IN_STORE if sql_calls(PACKAGE / rel)}
    assert still == SQL_NOT_YET_IN_STORE
