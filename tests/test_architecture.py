"""Layers point one way: sources -> parsing -> store -> indexing -> retrieval -> answering ->
service -> interfaces. A module may import its own layer or a lower one, never a higher one."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "coderag_tui"
LAYERS = {
    "models": 0, "progress_text": 0, "errors": 0, "config": 0, "trust": 0, "paths": 0, "textsafe": 0, "tokens": 0, "wire": 0, "__init__": 0,
    "sources": 1, "parsing": 2, "store": 3, "indexing": 4, "retrieval": 5,
    "answering": 6, "review": 6, "service": 7, "service_ask": 7, "service_core": 7, "contract": 7, "workspace": 7, "client": 7, "client_http": 7, "client_parts": 7, "client_tools": 7, "client_tree": 7,
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
def _string_parts(node: ast.AST) -> list[str]:
    """The literal text of a str constant, an f-string or a `+` of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string_parts(node.left) + _string_parts(node.right)
    return []


def sql_calls(source: str) -> list[int]:
    """The lines of the calls that run a literal SQL statement."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS and node.args):
            text = " ".join(_string_parts(node.args[0])).upper()
            if any(word in text for word in SQL_WORDS):
                found.append(node.lineno)
    return found


def test_the_store_owns_all_sql():
    offenders = [f"{path.relative_to(PACKAGE)}:{line}"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 if path.relative_to(PACKAGE).parts[0] != "store"
                 for line in sql_calls(path.read_text())]
    assert not offenders, offenders


def test_the_sql_check_sees_sql():
    # the check above passes on every module only while it can still see SQL
    source = """
db.execute("SELECT id FROM units WHERE id = ?", (1,))
rows = db.rows(f"SELECT {COLS}, m.rank FROM (SELECT rowid FROM chunks_fts) m")
db.one(read.UNIT_SELECT + " WHERE u.id = ?", (2,))
db.scalar("select count(*) from edges")
db.execute(statement)
names.one("a name")
"""
    assert sql_calls(source) == [2, 3, 4, 5]
    assert sql_calls((PACKAGE / "store" / "ranked.py").read_text())


ROOT = PACKAGE.parent
MAX_LINES = 500
# Modules still over MAX_LINES, to be split along their seams; the list may only shrink.
LONG_MODULES: set[str] = set()


def _python_outside_tests() -> list[Path]:
    folders = [PACKAGE, ROOT / "bench", ROOT / "docs"]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.rglob("*.py"))


def test_no_module_outside_tests_is_over_500_lines():
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in _python_outside_tests()}
    long = {rel for rel, n in lengths.items() if n > MAX_LINES}
    assert long <= LONG_MODULES, sorted((rel, lengths[rel]) for rel in long - LONG_MODULES)
    assert long == LONG_MODULES, f"split already, drop from LONG_MODULES: {sorted(LONG_MODULES - long)}"


# a comment or docstring that points at the history of the work, not at the code
HISTORY = re.compile(r"\b(?:issue|session|round|sprint|ticket)\s*#?\d+\b|\(#\d+\)", re.IGNORECASE)


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    return out


def test_no_comment_names_an_issue_or_a_round_of_work():
    found = [f"{path.relative_to(ROOT)}:{line}: {text.strip()[:80]}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for line, text in _comments_and_docstrings(path) if HISTORY.search(text)]
    assert not found, found


def test_the_history_check_sees_history():
    assert HISTORY.search("# see issue 24") and HISTORY.search("fixed in round 3") and HISTORY.search("(#12)")
    assert not HISTORY.search("an issue template's headings") and not HISTORY.search("round(x, 4)")


def _service_probes(source: str) -> list[int]:
    """Lines that find out what a service can do by probing it: `hasattr`/`getattr` on something
    named like a service, or `inspect.signature` at all."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name == "inspect.signature":
            found.append(node.lineno)
        elif name in ("hasattr", "getattr") and node.args:
            target = ast.unparse(node.args[0])
            if "service" in target or target in ("rag", "svc", "self.rag"):
                found.append(node.lineno)
    return found


def test_no_interface_probes_a_service():
    """The app, the CLI, the MCP and HTTP servers and the tools call the service contract
    (contract.py); what a service cannot do is in its capabilities, never found by probing."""
    allowed = {ROOT / "coderag_tui" / "answering" / "providers" / "base.py"}  # a provider's options
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in _python_outside_tests() if path not in allowed
           for line in _service_probes(path.read_text())]
    assert not bad, bad


def test_the_probe_check_sees_probes():
    assert _service_probes("x = getattr(service, 'embed', None)\nhasattr(self.service, 'watch')\n") == [1, 2]
    assert _service_probes("import inspect\ninspect.signature(f)\n") == [2]
    assert _service_probes("getattr(args, 'command', None)\n") == []
