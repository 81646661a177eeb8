"""The whole-file BM25 baseline of the SWE-bench Lite eval: each indexed file is one document
(its path and its text), ranked by BM25 for the issue's words. No chunks, units, symbols or graph.

Built per checkout in an in-memory SQLite FTS5 table (the standard library's sqlite3), from the
files the index holds (so the same file set as the other modes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from coderag_tui.retrieval.evaluate import KS, Case
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.service import CodeRag
from coderag_tui.store.sqlite_backend import fts_expression
from coderag_tui.tokens import estimate_tokens

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

    def context(self, question: str, max_tokens: int) -> str:
        """The best files for the question, best first, each from its first line, as much as fits
        in max_tokens (the last one cut at a line), with the `### path:a-b` header the context
        eval reads citations from."""
        out: list[str] = []
        used = 0
        for path in self.rank(question, 20):
            (body,) = self.conn.execute("SELECT body FROM docs WHERE path = ?", (path,)).fetchone()
            lines = body.split("\n")
            room = max_tokens - used - estimate_tokens(f"### {path}:1-{len(lines)}\n```\n\n```\n\n")
            if room <= 0:
                break
            kept: list[str] = []
            for text in lines:
                cost = estimate_tokens(text + "\n")
                if cost > room:
                    break
                kept.append(text)
                room -= cost
            if not kept:
                break
            piece = f"### {path}:1-{len(kept)}\n```\n" + "\n".join(kept) + "\n```"
            out.append(piece)
            used += estimate_tokens(piece + "\n\n")
        return "\n\n".join(out)

    def close(self) -> None:
        self.conn.close()


def file_rank(paths: Sequence[str], gold: Sequence[str]) -> int:
    """The rank of the last gold file (0: one is missing), as evaluate.file_rank."""
    ranks = [paths.index(g) + 1 if g in paths else 0 for g in gold]
    return 0 if not ranks or 0 in ranks else max(ranks)


def scores(service: CodeRag, cases: Sequence[Case], ks: Sequence[int] = KS) -> dict[str, float]:
    """File Acc@k of whole-file BM25 over the same index's files for the same cases."""
    baseline = WholeFileBM25(service)
    try:
        ranks = [file_rank(baseline.rank(c.query, max(ks)), c.gold_files) for c in cases]
    finally:
        baseline.close()
    return {f"file@{k}": round(100.0 * sum(1 for r in ranks if 0 < r <= k) / max(len(ranks), 1), 1) for k in ks}


def line(found: dict[str, float]) -> str:
    """The baseline's row under an eval's table (file level only: it ranks no units)."""
    return f"{'whole-file BM25':<15}" + "".join(f"  {v:7.1f}" for v in found.values())
