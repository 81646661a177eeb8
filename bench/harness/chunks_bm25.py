"""The BM25-over-chunks baseline of the SWE-QA context eval: the index's chunks (path and code,
no names, units, symbols, graph or prose rules), ranked by BM25 for the question's words and
packed best first into the same token budget as `coderag context`.

Built per index in an in-memory SQLite FTS5 table (the standard library's sqlite3), so the chunks
are exactly the ones the index holds; each piece is rendered with the same `### path:a-b` header
that the context eval reads citations from."""

from __future__ import annotations

import sqlite3

from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.service import CodeRag
from coderag_tui.store.sqlite_backend import fts_expression
from coderag_tui.tokens import estimate_tokens


class ChunkBM25:
    def __init__(self, service: CodeRag) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE docs USING fts5(path, body, start UNINDEXED, stop UNINDEXED, "
                          "tokenize='unicode61 remove_diacritics 2')")
        rows = service.db.rows("SELECT f.path, c.text, c.start_line, c.end_line FROM chunks c "
                               "JOIN files f ON f.id = c.file_id ORDER BY c.id")
        self.conn.executemany("INSERT INTO docs(path, body, start, stop) VALUES(?,?,?,?)",
                              [tuple(r) for r in rows])

    def context(self, question: str, max_tokens: int) -> str:
        """The best chunks for the question, best first, as many as fit in max_tokens."""
        terms = query_terms(question)[:200]
        if not terms:
            return ""
        out: list[str] = []
        used = 0
        for path, body, start, stop in self.conn.execute(
                "SELECT path, body, start, stop FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 200",
                (fts_expression(terms),)):
            piece = f"### {path}:{start}-{stop}\n```\n{body}\n```"
            cost = estimate_tokens(piece + "\n\n")
            if used + cost > max_tokens:
                continue  # a smaller chunk further down may still fit
            out.append(piece)
            used += cost
        return "\n\n".join(out)

    def close(self) -> None:
        self.conn.close()
