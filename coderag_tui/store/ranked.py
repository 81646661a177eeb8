"""The rows around the retrievers' ranked queries (the ranked queries themselves are the
backend's: `keyword_rows`, `knn_rows`): the chunk state their caches key on, the chunks a
vector stands for, the vectors of a span. Chunk rows are CHUNK_COLS (chunk id, unit id, file id,
start line, end line) and one more column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.store.backend import StoreBackend

CHUNK_COLS = "c.id, c.unit_id, c.file_id, c.start_line, c.end_line"


def vector_hashes(db: StoreBackend, ids: Sequence[int]) -> dict[int, str]:
    """vector id -> the chunk hash (or document key) it was made for."""
    return {int(i): str(h) for i, h in db.rows_in("SELECT id, hash FROM vectors WHERE id IN ({marks})", list(ids))}


def chunk_rows_by_hash(db: StoreBackend, hashes: Sequence[str]) -> list[tuple[Any, ...]]:
    """Chunk rows and their hash, of the chunks with these hashes."""
    return db.rows_in(f"SELECT {CHUNK_COLS}, c.hash FROM chunks c WHERE c.hash IN ({{marks}})", list(hashes),
                      batch=400)


def vector_chunk_rows(db: StoreBackend, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(vector id, vector hash, chunk id, unit id, file id, start line, end line) of these
    vectors and the chunks of their hash, in one read (the chunk's columns NULL when no chunk
    has the hash)."""
    return db.rows_in("SELECT v.id, v.hash, c.id, c.unit_id, c.file_id, c.start_line, c.end_line FROM vectors v "
                      "LEFT JOIN chunks c ON c.hash = v.hash WHERE v.id IN ({marks})", list(ids))


def span_vector_ids(db: StoreBackend, path: str, start: int, end: int) -> list[int]:
    """The ids of the vectors of the chunks overlapping lines start..end of a file (a chunk's
    own vector or its current document's)."""
    return [int(r[0]) for r in db.execute(
        "SELECT DISTINCT v.id FROM chunks c JOIN files f ON f.id=c.file_id JOIN vectors v ON v.hash=c.hash "
        "OR v.hash IN (SELECT d.key FROM embed_docs d WHERE d.chunk_hash=c.hash AND d.current=1) "
        "WHERE f.path=? AND c.start_line<=? AND c.end_line>=?",
        (path, end, start))]
