"""Vector KNN over sqlite-vec: a query vector -> the nearest chunk hashes -> their chunks.

Vectors are keyed by chunk hash, so one vector may stand for several identical chunks; each of
them is returned at the vector's rank. Filters are applied after the KNN (over-fetching).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from coderag_tui.indexing.embedder import VEC_TABLE, to_blob
from coderag_tui.models import SearchFilters
from coderag_tui.retrieval.common import (
    CHUNK_COLS,
    ChunkMatch,
    filtered_chunk_ids,
    has_filters,
    match_from_row,
)
from coderag_tui.store.db import Database

MAX_K = 4096  # sqlite-vec's limit on k


def vector_count(db: Database) -> int:
    if not db.has_table(VEC_TABLE):
        return 0
    return int(db.scalar("SELECT count(*) FROM vectors", default=0))


def knn_hashes(db: Database, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
    """(chunk hash, cosine distance) of the k nearest vectors."""
    if not db.has_table(VEC_TABLE) or k <= 0:
        return []
    rows = db.rows(
        f"SELECT v.hash, n.distance FROM (SELECT rowid, distance FROM {VEC_TABLE} "
        f"WHERE embedding MATCH ? AND k = ?) n JOIN vectors v ON v.id = n.rowid ORDER BY n.distance",
        (to_blob(vec), min(k, MAX_K)),
    )
    return [(str(h), float(d)) for h, d in rows]


def knn_chunks(
    db: Database,
    vec: np.ndarray,
    limit: int = 60,
    filters: SearchFilters | None = None,
    exclude_units: Sequence[int] = (),
) -> list[ChunkMatch]:
    """Chunks nearest to the vector (best first), at most `limit` of them."""
    fetch = limit * (8 if has_filters(filters) else 2) + len(exclude_units) * 2
    hashes = knn_hashes(db, vec, fetch)
    if not hashes:
        return []
    order = {h: i for i, (h, _) in enumerate(hashes)}
    dist = dict(hashes)
    by_hash: dict[str, list[tuple[Any, ...]]] = {}
    keys = list(order)
    for i in range(0, len(keys), 400):
        part = keys[i : i + 400]
        marks = ",".join("?" * len(part))
        for row in db.execute(f"SELECT {CHUNK_COLS}, c.hash FROM chunks c WHERE c.hash IN ({marks})", tuple(part)):
            by_hash.setdefault(str(row[5]), []).append(row)
    rows = [row for h in keys for row in sorted(by_hash.get(h, []))]
    allowed = filtered_chunk_ids(db, [r[0] for r in rows], filters)
    skip = set(exclude_units)
    out: list[ChunkMatch] = []
    for row in rows:
        if row[0] in allowed and row[1] not in skip:
            out.append(match_from_row(row, 1.0 - dist[str(row[5])]))
            if len(out) >= limit:
                break
    return out


def unit_vectors(db: Database, unit_id: int) -> list[np.ndarray]:
    """The stored vectors of a unit's chunks."""
    if not db.has_table(VEC_TABLE):
        return []
    rows = db.rows(
        f"SELECT t.embedding FROM chunks c JOIN vectors v ON v.hash = c.hash JOIN {VEC_TABLE} t "
        f"ON t.rowid = v.id WHERE c.unit_id = ? ORDER BY c.start_line",
        (unit_id,),
    )
    return [np.frombuffer(r[0], dtype=np.float32) for r in rows]
