"""The vectors of chunks: which chunk hashes have no vector yet, their texts, what is left to
collect; the vectors themselves are the backend's (`StoreBackend.write_vectors`, `knn_rows`, ...;
one model per index).

Vectors are keyed by chunk hash, so identical chunks share one vector and an unchanged chunk is
never embedded twice; a vector's id only grows (an in-memory copy follows the index by id).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from coderag_tui.store import embed_docs
from coderag_tui.store.backend import StoreBackend

VEC_TABLE = "vec_chunks"
REMOVALS_KEY = "vector_removals"  # meta: how many times vectors were removed
# the model of the index's vectors when it holds any (both backends' `vector_model`)
VECTOR_MODEL = "SELECT value FROM meta WHERE key = 'embed_model' AND EXISTS (SELECT 1 FROM vectors)"
# (embed dimension, model, removals count, largest vector id): both backends' `vector_state`
VECTOR_STATE = ("SELECT (SELECT value FROM meta WHERE key = 'embed_dim'), (SELECT value FROM meta WHERE key = "
                f"'embed_model'), (SELECT value FROM meta WHERE key = '{REMOVALS_KEY}'), "
                "(SELECT coalesce(max(id), 0) FROM vectors)")
# the chunks of the nearest vectors' hashes (`knn_chunk_rows`), after a backend's nearest `nn(hash, d)`
KNN_CHUNKS = ("SELECT nn.hash, nn.d, c.id, c.unit_id, c.file_id, c.start_line, c.end_line FROM nn "
              "LEFT JOIN chunks c ON c.hash = nn.hash ORDER BY nn.d, c.id")


def to_blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def note_removal(db: StoreBackend) -> None:
    """Count a removal of vectors (inside the removing transaction): readers that keep a copy of
    the vectors compare this count to know when to drop rows (added rows have larger ids)."""
    db.set_meta(REMOVALS_KEY, str(int(db.get_meta(REMOVALS_KEY) or 0) + 1))


def collect_garbage(db: StoreBackend) -> int:
    """Delete vectors nothing stands for any more (see `store.embed_docs.obsolete_vectors`)."""
    if not db.vec_ready():
        return 0
    with db.transaction():
        stale = embed_docs.obsolete_vectors(db)
        db.delete_vectors(stale)
        if stale:
            note_removal(db)
    return len(stale)


def pending_chunks(db: StoreBackend, paths: Sequence[str] | None = None) -> tuple[list[tuple[int, str]], int]:
    """(chunk id, hash) of one chunk per hash that has no vector, shortest text first, and how
    many chunks have no vector (one scan for both); only among the files `paths` when given.
    Chunks embedded with their summary (`store.embed_docs`) are counted there, not here.

    Sorting by length puts texts of similar size in a batch, so the model pads less.
    """
    where = ""
    params: tuple[str, ...] = ()
    if paths is not None:
        if not paths:
            return [], 0
        where = f"c.file_id IN (SELECT id FROM files WHERE path IN ({','.join('?' * len(paths))})) AND "
        params = tuple(paths)
    rows = db.rows(
        f"SELECT min(c.id) AS first_id, c.hash, min(length(c.header) + length(c.text)) AS n, count(*) FROM chunks c "
        f"WHERE {where}NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = c.hash) "
        f"AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.chunk_hash = c.hash AND d.current = 1) "
        f"GROUP BY c.hash ORDER BY n, first_id",
        params,
    )
    return [(int(r[0]), str(r[1])) for r in rows], sum(int(r[3]) for r in rows)


def chunk_texts(db: StoreBackend, ids: Sequence[int]) -> dict[int, str]:
    return {i: h + t for i, (h, t) in chunk_parts(db, ids).items()}


def chunk_parts(db: StoreBackend, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """(header, code) of chunks by id."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {int(i): (str(h), str(t)) for i, h, t in db.execute(
        f"SELECT id, header, text FROM chunks WHERE id IN ({marks})", tuple(ids))}


def all_embedded(db: StoreBackend) -> bool:
    """Every chunk has a vector (its own, or its summary document's) and every vector a chunk or
    a current document."""
    if db.scalar("SELECT 1 FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = c.hash) "
                 "AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.chunk_hash = c.hash AND d.current = 1) LIMIT 1"):
        return False
    return not db.scalar("SELECT 1 FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = v.hash) "
                         "AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.key = v.hash) LIMIT 1")


def chunk_count(db: StoreBackend, paths: Sequence[str] | None = None) -> int:
    """How many chunks the index has, or the files `paths` have."""
    if paths is None:
        return int(db.scalar("SELECT count(*) FROM chunks", default=0))
    marks = ",".join("?" * len(paths)) or "NULL"
    return int(db.scalar(f"SELECT count(*) FROM chunks WHERE file_id IN "
                         f"(SELECT id FROM files WHERE path IN ({marks}))", tuple(paths), default=0))


def vector_ids(db: StoreBackend) -> list[int]:
    return [int(r[0]) for r in db.execute("SELECT id FROM vectors")]


def max_vector_id(db: StoreBackend) -> int:
    """The largest vector id (ids only grow: a larger one means vectors were added); 0 for none."""
    return int(db.scalar("SELECT coalesce(max(id), 0) FROM vectors", default=0))


def vector_count(db: StoreBackend) -> int:
    return int(db.scalar("SELECT count(*) FROM vectors", default=0))


def embedded_counts(db: StoreBackend) -> tuple[int, int]:
    """(vectors, distinct chunk hashes), in one read: how much of the index is embedded, to
    first order (a vector not yet collected after its chunk changed counts too, so the share
    errs high, never low: a fully embedded index always reads as fully embedded)."""
    row = db.one("SELECT (SELECT count(*) FROM vectors), (SELECT count(DISTINCT hash) FROM chunks)")
    return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
