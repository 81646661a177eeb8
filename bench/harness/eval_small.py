"""The small retrieval eval on real Python code: requests 2.32.3's sdist with every docstring
removed; each query is the first line of a docstring, the gold the function, method or class it
documented. Used by tests/test_eval_small.py (which asserts against BASELINE),
bench/eval_languages.py and bench/eval_small_summaries.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from bench.harness import ROOT, Unreachable, sdist, unambiguous, wholefile_bm25
from coderag_tui.config import Settings
from coderag_tui.retrieval.evaluate import KS, Case, Hunk, accuracy, evaluate_case, table
from coderag_tui.retrieval.search import MODES
from coderag_tui.service import CodeRag

PACKAGE, VERSION, SRC = "requests", "2.32.3", "src/requests"
BASELINE = ROOT / "tests" / "data" / "eval_small_baseline.json"
MIN_WORDS = 4


Documented = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def _doc_nodes(tree: ast.Module) -> list[tuple[Documented, str]]:
    """(node, qualified name) of the module, classes and functions that have a docstring."""
    out: list[tuple[Documented, str]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = ".".join((*scope, child.name))
                if ast.get_docstring(child):
                    out.append((child, name))
                visit(child, (*scope, child.name))

    if ast.get_docstring(tree):
        out.append((tree, ""))
    visit(tree, ())
    return out


def strip_docstrings(source: str) -> tuple[str, list[tuple[str, str]]]:
    """The source without docstrings, and (qualified name, first docstring line) pairs."""
    tree = ast.parse(source)
    lines = source.split("\n")
    queries: list[tuple[str, str]] = []
    cuts: list[tuple[int, int, str | None]] = []  # (first, last) 1-based, replacement
    for node, name in _doc_nodes(tree):
        body = node.body
        doc = body[0]
        line = (ast.get_docstring(node) or "").strip().splitlines()[0].strip()
        if name and len(line.split()) >= MIN_WORDS:
            queries.append((name, line))
        indent = lines[doc.lineno - 1][: len(lines[doc.lineno - 1]) - len(lines[doc.lineno - 1].lstrip())]
        cuts.append((doc.lineno, doc.end_lineno or doc.lineno, None if len(body) > 1 else indent + "pass"))
    for first, last, repl in sorted(cuts, reverse=True):
        lines[first - 1 : last] = [repl] if repl is not None else []
    return "\n".join(lines), queries


def build_corpus(tmp: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    """The stripped package under tmp/repo, and (path, qualname, query) triples (Unreachable
    when the sdist cannot be downloaded)."""
    source = sdist(PACKAGE, VERSION)
    if source is None:
        raise Unreachable(f"cannot download {PACKAGE}=={VERSION} from PyPI")
    repo = tmp / "repo"
    triples: list[tuple[str, str, str]] = []
    for path in sorted((source / SRC).rglob("*.py")):
        rel = SRC + "/" + path.relative_to(source / SRC).as_posix()
        stripped, queries = strip_docstrings(path.read_text(encoding="utf-8"))
        out = repo / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(stripped)
        triples.extend((rel, qual, q) for qual, q in queries)
    return repo, unambiguous(triples)


def cases_for(service: CodeRag, triples: list[tuple[str, str, str]]) -> list[Case]:
    cases = []
    for path, qual, query in triples:
        row = service.db.one(
            "SELECT u.start_line FROM units u JOIN files f ON f.id = u.file_id WHERE f.path = ? AND u.qualname = ?",
            (path, qual))
        if row is None:
            continue
        line = int(row[0])
        cases.append(Case(f"{path}::{qual}", query, (path,), (Hunk(path, max(line - 3, 1), 7),)))
    return cases


def run_eval(tmp: Path, settings: Settings | None = None, modes: tuple[str, ...] = MODES,
             limit: int | None = None) -> tuple[dict[str, dict[str, float]], str, int]:
    """Index and embed the corpus under tmp, search every query: (scores by mode and metric, the
    printed table, the number of queries)."""
    repo, triples = build_corpus(tmp)
    service = CodeRag(repo, settings or Settings(), tmp / "index.db")
    try:
        service.index()
        service.embed()
        cases = cases_for(service, triples)
        if limit is not None and len(cases) > limit:  # evenly spread over the package
            cases = [cases[int(i * len(cases) / limit)] for i in range(limit)]
        searcher = service.searcher()
        results = [evaluate_case(searcher, c, modes) for c in cases]
        baseline = wholefile_bm25.scores(service, cases)
    finally:
        service.close()
    scores = {mode: {f"{level}@{k}": round(accuracy(results, level, mode, k), 1)
                     for level in ("file", "func") for k in KS} for mode in modes}
    scores[wholefile_bm25.MODE] = baseline
    return scores, table(results, modes) + "\n" + wholefile_bm25.line(baseline), len(cases)
