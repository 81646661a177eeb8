"""The retrievers' ranked queries: BM25 over the FTS5 table `chunks_fts`, the term counts that
choose its words, and the chunk rows they point at. Each returns rows of CHUNK_COLS (chunk id,
unit id, file id, start line, end line) followed by the rank."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.models import SearchFilters
from coderag_tui.store.db import Database
from coderag_tui.store.filters import filter_sql, has_filters

CHUNK_COLS = "c.id, c.unit_id, c.file_id, c.start_line, c.end_line"


def chunk_state(db: Database) -> tuple[int, int]:
    """(number of chunks, largest chunk id): a change of either means new term counts."""
    # two statements: together the aggregates scan the whole table (~20 ms at 200k chunks),
    # apart SQLite answers each from a b-tree edge or its count shortcut (~0.3 ms)
    return (int(db.scalar("SELECT count(*) FROM chunks") or 0),
            int(db.scalar("SELECT coalesce(max(id), 0) FROM chunks") or 0))


def _vocab_ready(db: Database) -> None:
    if not db.scalar("SELECT 1 FROM temp.sqlite_master WHERE name='chunks_vocab'"):
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab USING fts5vocab(main, chunks_fts, row)")


def term_chunk_counts(db: Database, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each term, for the terms the index holds (fts5vocab reads a term's
    whole doclist to count it)."""
    _vocab_ready(db)
    return {str(t): int(n) for t, n in db.rows_in(
        "SELECT term, doc FROM temp.chunks_vocab WHERE term IN ({marks})", terms)}


def bm25_rows(db: Database, expr: str, rank: str, limit: int,
              filters: SearchFilters | None = None) -> list[tuple[Any, ...]]:
    """Chunk rows and their bm25 rank (smaller is better) for an FTS5 expression, best first;
    `rank` is the bm25(...) call weighing the columns."""
    if not has_filters(filters):
        return db.rows(
            f"SELECT {CHUNK_COLS}, m.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
            f"AND rank MATCH ? ORDER BY rank LIMIT ?) m JOIN chunks c ON c.id = m.rowid ORDER BY m.rank",
            (expr, rank, limit),
        )
    cond, params = filter_sql(filters)
    return db.rows(
        f"SELECT {CHUNK_COLS}, m.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
        f"AND rank MATCH ?) m JOIN chunks c ON c.id = m.rowid JOIN files f ON f.id = c.file_id "
        f"WHERE {cond} ORDER BY m.rank LIMIT ?",
        (expr, rank, *params, limit),
    )
