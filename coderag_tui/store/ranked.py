"""The retrievers' ranked queries: BM25 over the FTS5 table `chunks_fts` and the term counts
that choose its words; sqlite-vec KNN and the vectors it ranks; the chunk rows they point at.
Chunk rows are CHUNK_COLS (chunk id, unit id, file id, start line, end line) and one more column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.models import SearchFilters
from coderag_tui.store.db import Database
from coderag_tui.store.embeddings import VEC_TABLE
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


def has_vectors(db: Database) -> bool:
    """Whether the index holds any vector (a count would read the whole table)."""
    return db.has_table(VEC_TABLE) and bool(db.scalar("SELECT 1 FROM vectors LIMIT 1"))


def vector_blobs(db: Database, ids: Sequence[int]) -> dict[int, bytes]:
    """vector id -> its stored float32 blob, for the ids that have one."""
    return dict(db.rows_in(f"SELECT rowid, embedding FROM {VEC_TABLE} WHERE rowid IN ({{marks}})", list(ids)))


def vector_hashes(db: Database, ids: Sequence[int]) -> dict[int, str]:
    """vector id -> the chunk hash (or document key) it was made for."""
    marks = ",".join("?" * len(ids))
    return dict(db.execute(f"SELECT id, hash FROM vectors WHERE id IN ({marks})", list(ids)))


def knn_rows(db: Database, blob: bytes, k: int) -> list[tuple[Any, ...]]:
    """(chunk hash, cosine distance) of the k vectors nearest the query blob, by a sqlite-vec scan."""
    return db.rows(
        f"SELECT v.hash, n.distance FROM (SELECT rowid, distance FROM {VEC_TABLE} "
        f"WHERE embedding MATCH ? AND k = ?) n JOIN vectors v ON v.id = n.rowid ORDER BY n.distance",
        (blob, k),
    )


def chunk_rows_by_hash(db: Database, hashes: Sequence[str]) -> list[tuple[Any, ...]]:
    """Chunk rows and their hash, of the chunks with these hashes."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(hashes), 400):
        part = hashes[i : i + 400]
        marks = ",".join("?" * len(part))
        out += db.execute(f"SELECT {CHUNK_COLS}, c.hash FROM chunks c WHERE c.hash IN ({marks})", tuple(part))
    return out


def span_vector_ids(db: Database, path: str, start: int, end: int) -> list[int]:
    """The ids of the vectors of the chunks overlapping lines start..end of a file (a chunk's
    own vector or its current document's)."""
    return [int(r[0]) for r in db.execute(
        "SELECT DISTINCT v.id FROM chunks c JOIN files f ON f.id=c.file_id JOIN vectors v ON v.hash=c.hash "
        "OR v.hash IN (SELECT d.key FROM embed_docs d WHERE d.chunk_hash=c.hash AND d.current=1) "
        "WHERE f.path=? AND c.start_line<=? AND c.end_line>=?",
        (path, end, start))]
