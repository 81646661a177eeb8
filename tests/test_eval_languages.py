"""Retrieval on real Go, TypeScript and Rust code, runnable in CI (tests/eval_langs.py).

For each language a pinned package from a registry (Debian, npm) is indexed and embedded with
the bundled model after every comment line is removed; each query is a doc comment's first
sentence and the gold is the unit it documented. File- and function-level Acc@1/5/10 of
bm25-only, vector-only and hybrid must not fall more than MARGIN points below the baseline in
tests/data/eval_languages_baseline.json (re-record with
`python tests/test_eval_languages.py --record`; `--lang go` for one language).
"""

from __future__ import annotations

import json
import sys
import urllib.error
from pathlib import Path

import pytest

from coderag_tui.config import Settings
from coderag_tui.retrieval.evaluate import KS, Case, Hunk, accuracy, evaluate_case, table
from coderag_tui.retrieval.search import MODES
from coderag_tui.service import CodeRag
from coderag_tui.store import read
from tests.eval_langs import CORPORA, Corpus, Unreachable, build

BASELINE = Path(__file__).parent / "data" / "eval_languages_baseline.json"
MARGIN = 5.0  # points of Acc@k a change may lose before the test fails (~6 queries of 120)
MAX_QUERIES = 120  # per language: the search part stays under a minute on 2 busy cores
MAX_ATTRIBUTE_LINES = 4  # a unit may start this far above its declaration (#[inline], @Decorator)


def cases_for(service: CodeRag, triples: list[tuple[str, int, str]], limit: int = MAX_QUERIES) -> list[Case]:
    """A case for each query whose declaration line starts a unit of the index."""
    cases = []
    for path, line, query in triples:
        units = [u for u in read.units_at(service.db, path, line) if u.kind != "file"]
        if not units or not line - MAX_ATTRIBUTE_LINES <= units[0].start_line <= line:
            continue  # a field, a variable, an overload the parser does not make a unit
        cases.append(Case(f"{path}:{line}", query, (path,), (Hunk(path, max(line - 3, 1), 7),)))
    step = max(len(cases) / limit, 1.0)  # evenly spread over the package
    return [cases[int(i * step)] for i in range(min(len(cases), limit))]


def run_eval(corpus: Corpus, tmp: Path, settings: Settings | None = None, modes: tuple[str, ...] = MODES,
             limit: int = MAX_QUERIES) -> tuple[dict[str, dict[str, float]], str, int]:
    repo = tmp / corpus.lang
    triples = build(corpus, repo)
    service = CodeRag(repo, settings or Settings(), tmp / f"{corpus.lang}.db")
    try:
        service.index()
        service.embed()
        cases = cases_for(service, triples, limit)
        searcher = service.searcher()
        results = [evaluate_case(searcher, c, modes) for c in cases]
    finally:
        service.close()
    scores = {mode: {f"{level}@{k}": round(accuracy(results, level, mode, k), 1)
                     for level in ("file", "func") for k in KS} for mode in modes}
    return scores, table(results, modes), len(cases)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", CORPORA, ids=[c.lang for c in CORPORA])
def test_eval_language(corpus: Corpus, tmp_path: Path) -> None:
    try:
        scores, text, n = run_eval(corpus, tmp_path)
    except Unreachable as exc:
        pytest.skip(f"{corpus.label}: {exc}")
    except urllib.error.HTTPError as exc:
        pytest.fail(f"{corpus.url} answered {exc.code}: pin another version in tests/eval_langs.py")
    print(f"\n{corpus.label}: {n} doc-comment queries over the code with comments removed\n{text}")
    assert n >= 60
    recorded = json.loads(BASELINE.read_text())[corpus.lang]
    assert recorded["corpus"] == corpus.label, "the corpus changed: re-record the baseline"
    for mode in ("hybrid", "bm25"):
        for metric, value in recorded["scores"][mode].items():
            assert scores[mode][metric] >= value - MARGIN, (mode, metric, scores[mode][metric], value)


if __name__ == "__main__":  # record the baseline
    import tempfile

    if "--record" not in sys.argv:
        raise SystemExit("usage: python tests/test_eval_languages.py --record [--lang LANG]")
    langs = sys.argv[sys.argv.index("--lang") + 1].split(",") if "--lang" in sys.argv else None
    data = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    for corpus in CORPORA:
        if langs and corpus.lang not in langs:
            continue
        with tempfile.TemporaryDirectory() as d:
            scores, text, n = run_eval(corpus, Path(d))
        print(f"{corpus.label}: {n} queries\n{text}\n", flush=True)
        data[corpus.lang] = {"corpus": corpus.label, "queries": n, "scores": scores}
    BASELINE.parent.mkdir(parents=True, exist_ok=True)
    BASELINE.write_text(json.dumps(data, indent=2) + "\n")
    print(f"recorded {BASELINE}")


GO = """package cobra

// Command is just that, a command for your application.
// More text.
type Command struct {
\t// Use is the one-line usage message.
\tUse string
}

// Execute uses the args and runs through the command tree.
func (c *Command) Execute() error {
\treturn nil // inline comments stay
}
"""
RUST = """//! Crate docs are not queries.

/// Create an iterator over the "cartesian product" of iterators.
///
/// ```
/// let x = 1;
/// ```
#[macro_export]
macro_rules! iproduct { () => {} }

/// Too short.
pub fn f() {}
"""
TS = """/**
 * Emits only the first `count` values emitted by the source {@link Observable}.
 *
 * @param count The maximum number of values.
 */
export function take<T>(count: number): T {
  /* a block comment */
  return count;
}
/** Returns a new Subscriber that ignores every value. */ export class Quiet {}
"""


@pytest.mark.parametrize(("lang", "text", "expected"), [
    ("go", GO, [("type Command struct {", "is just that, a command for your application."),
                ("func (c *Command) Execute() error {", "uses the args and runs through the command tree.")]),
    ("rust", RUST, [("macro_rules! iproduct { () => {} }",
                     'Create an iterator over the "cartesian product" of iterators.')]),
    ("typescript", TS, [("export function take<T>(count: number): T {",
                         "Emits only the first `count` values emitted by the source Observable."),
                        (" export class Quiet {}", "Returns a new Subscriber that ignores every value.")]),
])
def test_doc_comments_become_queries_and_leave_the_code(lang: str, text: str,
                                                         expected: list[tuple[str, str]]) -> None:
    from tests.eval_langs import strip_comments

    stripped, found = strip_comments(text, lang)
    lines = stripped.split("\n")
    assert [(lines[n - 1], q) for n, q in found] == expected
    assert not any(s.strip().startswith(("//", "/*", "*")) for s in lines)
    assert "inline comments stay" in stripped or lang != "go"
