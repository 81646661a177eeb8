"""An in-memory copy of the index's vectors for fast exact KNN (one matrix product).

sqlite-vec's KNN is a brute-force scan inside SQLite; over ~200k vectors it takes most of a
second here, where numpy takes tens of milliseconds over the same float32 vectors. The copy is
loaded on the first vector search, then kept current by reading only vectors added since (ids
grow); a removal or a model change reloads it. Above MAX_VECTORS (about 1.5 KB each at 384
dimensions) the copy is not kept and sqlite-vec scans instead.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from coderag_tui.indexing.embedder import VEC_TABLE
from coderag_tui.store.db import Database

MAX_VECTORS = 300_000  # ~440 MB at 384 dimensions
RECHECK_S = 2.0  # searches within this time of the last check trust the copy (counting is a scan)


class VectorMatrix:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.model = ""
        self.ids: np.ndarray = np.zeros(0, dtype=np.int64)
        self.mat: np.ndarray = np.zeros((0, 0), dtype=np.float32)
        self._seen: tuple[str, int, int] = ("", -1, -1)  # (model, count, max id) the copy reflects
        self._checked = 0.0  # when the index was last compared with the copy

    def _rows(self, db: Database, after: int) -> tuple[np.ndarray, np.ndarray]:
        ids: list[int] = []
        blobs: list[bytes] = []
        for rowid, blob in db.execute(
            f"SELECT v.id, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id "
            f"WHERE v.id > ? ORDER BY v.id", (after,)):
            ids.append(int(rowid))
            blobs.append(blob)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.mat.shape[1] if self.mat.size else 0),
                                                         dtype=np.float32)
        mat = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        return np.asarray(ids, dtype=np.int64), mat / np.where(norms > 0, norms, 1.0)

    def refresh(self, db: Database) -> bool:
        """Bring the copy up to date. False when the index has too many vectors to keep."""
        now = time.monotonic()
        if self._seen[1] >= 0 and now - self._checked < RECHECK_S:
            return self._seen[1] <= MAX_VECTORS
        self._checked = now
        model = db.get_meta("embed_model")
        count, top = db.one("SELECT count(*), coalesce(max(id), 0) FROM vectors") or (0, 0)
        if count > MAX_VECTORS or not db.has_table(VEC_TABLE):
            self._reset("")
            self._seen = (model, count, top)
            return False
        if (model, count, top) == self._seen:
            return True
        if model != self.model:
            self._reset(model)
        last = int(self.ids[-1]) if len(self.ids) else 0
        ids, mat = self._rows(db, last)  # vectors added since (ids only grow)
        if len(ids):
            self.ids = np.concatenate([self.ids, ids])
            self.mat = mat if not self.mat.size else np.concatenate([self.mat, mat])
        if len(self.ids) != count:  # some were removed too: read them all again
            self.ids, self.mat = self._rows(db, 0)
        self._seen = (model, count, top)
        return True

    def _reset(self, model: str) -> None:
        self.ids, self.mat, self.model = np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32), model
        self._seen = ("", -1, -1)

    def knn(self, db: Database, vec: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """(vector id, cosine distance) of the k nearest, or None when no copy can be kept."""
        with self._lock:
            if not self.refresh(db):
                return None
            if not len(self.ids) or k <= 0:
                return []
            q = np.asarray(vec, dtype=np.float32)
            sims = self.mat @ (q / (float(np.linalg.norm(q)) or 1.0))  # rows are unit length
            k = min(k, len(sims))
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(int(self.ids[i]), float(1.0 - sims[i])) for i in top]
