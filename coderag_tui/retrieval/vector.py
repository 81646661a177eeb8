"""Vector KNN: a query vector -> the nearest chunk hashes -> their chunks (in memory, or the
backend's search: a sqlite-vec scan, pgvector's HNSW).

Vectors are keyed by chunk hash (or by the hash of a chunk's document with its summary, see
store/embed_docs.py), so one vector may stand for several identical chunks; each of them is
returned at the vector's rank. Filters are applied after the KNN (over-fetching).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from coderag_tui.models import SearchFilters
from coderag_tui.retrieval import lexical
from coderag_tui.retrieval.common import ChunkMatch, match_from_row
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.store import embed_docs, ranked
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.embeddings import embedded_counts, vector_count
from coderag_tui.store.filters import chunks_passing, has_filters

MAX_K = 4096  # sqlite-vec's limit on k
# each store's (chunk state, distinct chunk hashes, embedded share), as last counted
_SHARE: weakref.WeakKeyDictionary[StoreBackend, tuple[tuple[int, int], int, float]] = weakref.WeakKeyDictionary()
_SHARE_LOCK = threading.Lock()


def has_vectors(db: StoreBackend) -> bool:
    """Whether the index holds any vector."""
    return db.has_vectors()


def embedded_share(db: StoreBackend) -> float:
    """The share of the index's chunk hashes that have a vector (1.0 when every one has, or
    the index has no chunks): while an index is being embedded, the KNN ranks only that share
    of the chunks.

    Keyed by the chunk state a search has already read: a full index reads nothing more (its
    vectors only go with their chunks; a new model's vectors start over, and until the chunks
    change are fused as a full index's were); a partly embedded one counts its vectors again
    at each search (one read), as the embedder adds them."""
    state = lexical.chunk_state(db)
    with _SHARE_LOCK:
        cached = _SHARE.get(db)
    if cached is not None and cached[0] == state:
        if cached[2] >= 1.0:
            return 1.0
        vectors, hashes = vector_count(db), cached[1]
    else:
        vectors, hashes = embedded_counts(db)
    share = 1.0 if hashes <= 0 or vectors >= hashes else vectors / hashes
    with _SHARE_LOCK:
        _SHARE[db] = (state, hashes, share)
    return share


def vectors_by_id(db: StoreBackend, ids: Sequence[int], matrix: VectorMatrix | None = None) -> np.ndarray:
    """The vectors with these ids, as rows in their order, unknown ids left out. They come from
    the in-memory copy when one is kept: sqlite-vec reads a vector by id in ~0.3 ms here, so a
    70-chunk file took ~20 ms."""
    if not ids:
        return np.zeros((0, 0), dtype=np.float32)
    rows = matrix.vectors(db, ids) if matrix is not None else None
    if rows is not None:
        return rows
    found = db.vector_blobs(ids)
    blobs = [found[i] for i in ids if i in found]
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def knn_hashes(db: StoreBackend, vec: np.ndarray, k: int, matrix: VectorMatrix | None = None) -> list[tuple[str, float]]:
    """(chunk hash, cosine distance) of the k nearest vectors (in memory when `matrix` can hold
    the index's vectors, else the backend's search; each asks itself whether the index has
    vectors, so that a search to a server makes no round trip for it)."""
    if k <= 0:
        return []
    nearest = matrix.knn(db, vec, k) if matrix is not None else None
    if nearest is not None:
        if not nearest:
            return []
        hashes = ranked.vector_hashes(db, [i for i, _ in nearest])
        return [(str(hashes[i]), d) for i, d in nearest if i in hashes]
    return db.knn_rows(vec, min(k, MAX_K))


def _nearest_chunks(db: StoreBackend, vec: np.ndarray, k: int,
                    matrix: VectorMatrix | None) -> list[tuple[str, float, tuple[Any, ...]]]:
    """(vector key, cosine distance, chunk row of its hash or Nones) of the k nearest vectors,
    nearest first, with the chunks in the same read (each read is a round trip to a server)."""
    if k <= 0:
        return []
    nearest = matrix.knn(db, vec, k) if matrix is not None else None
    if nearest is None:
        return [(str(r[0]), float(r[1]), tuple(r[2:])) for r in db.knn_chunk_rows(vec, min(k, MAX_K))]
    by_id: dict[int, list[tuple[Any, ...]]] = {}
    for row in ranked.vector_chunk_rows(db, [i for i, _ in nearest]) if nearest else []:
        by_id.setdefault(int(row[0]), []).append(tuple(row[1:]))
    return [(str(r[0]), d, r[1:]) for i, d in nearest for r in by_id.get(i, [])]


def knn_chunks(
    db: StoreBackend,
    vec: np.ndarray,
    limit: int = 60,
    filters: SearchFilters | None = None,
    exclude_units: Sequence[int] = (),
    matrix: VectorMatrix | None = None,
) -> list[ChunkMatch]:
    """Chunks nearest to the vector (best first), at most `limit` of them."""
    fetch = int(limit * (8 if has_filters(filters) else 1.5)) + len(exclude_units) * 2
    found = _nearest_chunks(db, vec, fetch, matrix)
    if not found:
        return []
    keyed: list[tuple[str, float]] = []
    direct: dict[str, list[tuple[Any, ...]]] = {}  # key -> the chunks of that hash, as chunk rows
    for key, d, chunk in found:
        if key not in direct:
            direct[key] = []
            keyed.append((key, d))
        if chunk[0] is not None:
            direct[key].append((*chunk, key))
    # a document's vector stands for its chunk; a chunk found twice (its new document's vector
    # and the one it replaces, until that is dropped) keeps its nearer one
    of_doc = embed_docs.chunk_hashes(db, [k for k, _ in keyed])
    hashes: list[tuple[str, float]] = []
    seen: set[str] = set()
    for key, d in keyed:
        h = of_doc.get(key, key)
        if h not in seen:
            seen.add(h)
            hashes.append((h, d))
    order = {h: i for i, (h, _) in enumerate(hashes)}
    dist = dict(hashes)
    keys = list(order)
    by_hash = {h: direct[h] for h in keys if h in direct}
    for row in ranked.chunk_rows_by_hash(db, [h for h in keys if h not in direct]):  # (a document's chunk)
        by_hash.setdefault(str(row[5]), []).append(row)
    rows = [row for h in keys for row in sorted(by_hash.get(h, []))]
    allowed = chunks_passing(db, [r[0] for r in rows], filters)
    skip = set(exclude_units)
    out: list[ChunkMatch] = []
    for row in rows:
        if row[0] in allowed and row[1] not in skip:
            out.append(match_from_row(row, 1.0 - dist[str(row[5])]))
            if len(out) >= limit:
                break
    return out

