"""The whole-file BM25 baseline of the SWE-bench Lite eval: each indexed file is one document
(its path and its text), ranked by BM25 for the issue's words. No chunks, units, symbols or graph.

Built per checkout in an in-memory SQLite FTS5 table (the standard library's sqlite3), from the
files the index holds (so the same file set as the other modes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.service import CodeRag
from coderag_tui.store.sqlite_backend import fts_expression

MODE = "wholefile"


class WholeFileBM25:
    def __init__(self, service: CodeRag) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE docs USING fts5(path, body, tokenize='unicode61 remove_diacritics 2')")
        rows = []
        for (path,) in service.db.rows("SELECT path FROM files ORDER BY path"):
            try:
                body = (service.root / path).read_text("utf-8", "replace")
            except OSError:
                continue
            rows.append((path, body))
        self.conn.executemany("INSERT INTO docs(path, body) VALUES(?,?)", rows)

    def rank(self, query: str, k: int = 10) -> list[str]:
        terms = query_terms(query)[:200]
        if not terms:
            return []
        return [r[0] for r in self.conn.execute(
            "SELECT path FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (fts_expression(terms), k))]

    def close(self) -> None:
        self.conn.close()


def file_rank(paths: Sequence[str], gold: Sequence[str]) -> int:
    """The rank of the last gold file (0: one is missing), as evaluate.file_rank."""
    ranks = [paths.index(g) + 1 if g in paths else 0 for g in gold]
    return 0 if not ranks or 0 in ranks else max(ranks)
