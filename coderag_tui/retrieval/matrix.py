"""An in-memory copy of the index's vectors for fast KNN.

sqlite-vec's KNN is a brute-force scan inside SQLite; over ~200k vectors it takes most of a
second here. The copy answers in milliseconds:

- up to EXACT_MAX vectors: float32 rows, exact cosine KNN by one matrix product;
- above: binary codes (the sign of each dimension after subtracting the mean vector, packed
  64 dimensions to a word) rank every vector by Hamming distance, and the RERANK x k nearest
  codes are re-scored from int8 rows (each row scaled by its largest component; a cosine off by
  well under 1%). Recall of the top 180 against exact KNN was
  0.95-0.98 on real MiniLM vectors (bench/bench_retrieval.py prints it for the big index).

The copy is loaded on the first vector search, then kept current: every search compares the
largest vector id (ids are never reused) and the count of removals the embedder records in
`meta`, reads only the vectors added since, and after a removal drops the rows whose id is gone
(one read of the ids, not of the vectors). A model change reloads it. Above MAX_VECTORS no copy
is kept and sqlite-vec scans instead.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.embeddings import vector_count, vector_ids

MAX_VECTORS = 2_000_000  # ~0.9 GB of int8 rows and codes at 384 dimensions
EXACT_MAX = 60_000  # up to here the copy is float32 and KNN exact (~90 MB at 384 dimensions)
RERANK = 20  # binary-code candidates re-scored exactly, per wanted result
MIN_RERANK = 2_000


class VectorMatrix:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.model = ""
        self.ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self.mat: np.ndarray = np.zeros((0, 0), dtype=np.float32)  # unit rows (int8 when large)
        self.scale: np.ndarray = np.zeros(0, dtype=np.float32)  # int8 row i is mat[i] * scale[i]
        self.codes: np.ndarray = np.zeros((0, 0), dtype=np.uint64)  # words x rows, when large
        self.center: np.ndarray = np.zeros(0, dtype=np.float32)
        self._seen: tuple[str, str, int] = ("", "", -1)  # (model, removals, max id) the copy reflects
        self._too_many = False

    @property
    def exact(self) -> bool:
        return self.mat.dtype == np.float32

    def _rows(self, db: StoreBackend, after: int) -> tuple[np.ndarray, np.ndarray]:
        ids: list[int] = []
        blobs: list[bytes] = []
        for rowid, blob in db.vectors_after(after):
            ids.append(rowid)
            blobs.append(blob)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.mat.shape[1] if self.mat.size else 0),
                                                         dtype=np.float32)
        mat = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        return np.asarray(ids, dtype=np.int64), mat / np.where(norms > 0, norms, 1.0)

    def _codes(self, rows: np.ndarray) -> np.ndarray:
        """Sign bits of (rows - center), packed into 64-bit words: shape (words, rows)."""
        bits = np.packbits(rows - self.center > 0, axis=1)
        pad = (-bits.shape[1]) % 8
        if pad:
            bits = np.pad(bits, ((0, 0), (0, pad)))
        return np.ascontiguousarray(np.ascontiguousarray(bits).view(np.uint64).T)

    def _load(self, ids: np.ndarray, mat: np.ndarray) -> None:
        """Replace the copy with these rows, choosing the exact or the coded form by size."""
        self.ids = ids
        if len(ids) <= EXACT_MAX:
            self.mat, self.codes = mat.astype(np.float32, copy=False), np.zeros((0, 0), dtype=np.uint64)
            self.scale = np.ones(len(ids), dtype=np.float32)
            self.center = np.zeros(mat.shape[1] if mat.ndim == 2 else 0, dtype=np.float32)
            return
        self.center = mat.mean(axis=0).astype(np.float32)
        self.codes = self._codes(mat)
        self.mat, self.scale = self._int8(mat)

    @staticmethod
    def _int8(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scale = np.abs(rows).max(axis=1) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        return np.rint(rows / scale[:, None]).astype(np.int8), scale

    def _append(self, ids: np.ndarray, mat: np.ndarray) -> None:
        if not len(self.ids):
            self._load(ids, mat)
        elif self.exact and len(self.ids) + len(ids) > EXACT_MAX:
            self._load(np.concatenate([self.ids, ids]), np.concatenate([self.mat, mat]))
        elif self.exact:
            self.ids, self.mat = np.concatenate([self.ids, ids]), np.concatenate([self.mat, mat])
            self.scale = np.ones(len(self.ids), dtype=np.float32)
        else:
            small, scale = self._int8(mat)
            self.ids = np.concatenate([self.ids, ids])
            self.mat, self.scale = np.concatenate([self.mat, small]), np.concatenate([self.scale, scale])
            self.codes = np.concatenate([self.codes, self._codes(mat)], axis=1)

    def refresh(self, db: StoreBackend) -> bool:
        """Bring the copy up to date. False when the index has too many vectors to keep."""
        state = db.vector_state()  # one read before each search
        if state is None:
            self._reset("")
            return True
        model, removals, top = state
        if model != self.model:
            self._reset(model)
        if self._seen == (model, removals, top):
            return not self._too_many
        if not len(self.ids):  # loading from scratch: is the index small enough to copy?
            self._too_many = vector_count(db) > MAX_VECTORS
            if self._too_many:
                self._seen = (model, removals, top)
                return False
        elif removals != self._seen[1]:  # vectors were removed: keep the rows still there
            live = np.fromiter(vector_ids(db), dtype=np.int64)
            self._keep(np.isin(self.ids, live, assume_unique=True))
        last = int(self.ids[-1]) if len(self.ids) else 0
        if top > last:
            ids, mat = self._rows(db, last)  # vectors added since (ids only grow, never reused)
            if len(ids):
                self._append(ids, mat)
        self._seen = (model, removals, top)
        return True

    def _keep(self, mask: np.ndarray) -> None:
        if mask.all():
            return
        self.ids, self.mat, self.scale = self.ids[mask], self.mat[mask], self.scale[mask]
        if not self.exact:
            self.codes = np.ascontiguousarray(self.codes[:, mask])

    def _reset(self, model: str) -> None:
        self._load(np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
        self.model = model
        self._seen = ("", "", -1)
        self._too_many = False

    def knn(self, db: StoreBackend, vec: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """(vector id, cosine distance) of the k nearest, or None when no copy can be kept."""
        with self._lock:
            if not self.refresh(db):
                return None
            if not len(self.ids) or k <= 0:
                return []
            q = np.asarray(vec, dtype=np.float32)
            q = q / (float(np.linalg.norm(q)) or 1.0)
            k = min(k, len(self.ids))
            # einsum, not BLAS: a matrix-vector product gains nothing from BLAS threads, which
            # lose badly on a busy machine
            if self.exact:
                rows = np.arange(len(self.ids))
                sims = np.einsum("ij,j->i", self.mat, q)  # rows are unit length
            else:
                rows = self._candidates(q, max(k * RERANK, MIN_RERANK))
                sims = np.einsum("ij,j->i", self.mat[rows].astype(np.float32), q) * self.scale[rows]
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(int(self.ids[rows[i]]), float(1.0 - sims[i])) for i in top]

    def vectors(self, db: StoreBackend, ids: Sequence[int]) -> np.ndarray | None:
        """The unit-length rows of these vector ids that the copy holds (int8 rows rescaled), or
        None when no copy can be kept."""
        with self._lock:
            if not self.refresh(db):
                return None
            want = np.asarray(ids, dtype=np.int64)
            if not len(self.ids) or not len(want):
                return np.zeros((0, self.mat.shape[1] if self.mat.ndim == 2 else 0), dtype=np.float32)
            pos = np.searchsorted(self.ids, want)  # ids are kept in ascending order
            pos = pos[(pos < len(self.ids)) & (self.ids[np.minimum(pos, len(self.ids) - 1)] == want)]
            return self.mat[pos].astype(np.float32) * self.scale[pos, None]

    def _candidates(self, q: np.ndarray, m: int) -> np.ndarray:
        """Row numbers of the m codes nearest to the query's code (Hamming distance)."""
        qc = self._codes(q[None, :])[:, 0]
        dist = np.bitwise_count(self.codes[0] ^ qc[0]).astype(np.uint16)
        for w in range(1, len(qc)):
            dist += np.bitwise_count(self.codes[w] ^ qc[w])
        if m >= len(dist):
            return np.arange(len(dist))
        return np.argpartition(dist, m - 1)[:m]
