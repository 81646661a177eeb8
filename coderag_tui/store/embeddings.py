"""The vectors of chunks: the sqlite-vec table (one model per index), which chunk hashes have no
vector yet, writing new ones and reading them back.

Vectors are keyed by chunk hash (`vectors.id` is the rowid of `vec_chunks`), so identical
chunks share one vector and an unchanged chunk is never embedded twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from coderag_tui.store import embed_docs
from coderag_tui.store.db import Database

VEC_TABLE = "vec_chunks"
REMOVALS_KEY = "vector_removals"  # meta: how many times vectors were removed


def vec_ready(db: Database, model_id: str | None = None) -> bool:
    """The index has a vector table (for `model_id`, when given)."""
    if not db.has_table(VEC_TABLE):
        return False
    return model_id is None or db.get_meta("embed_model") == model_id


def to_blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def ensure_model_table(db: Database, model_id: str, dim: int) -> bool:
    """Make the vector table fit the model. Returns True when old vectors were dropped."""
    same = db.get_meta("embed_model") == model_id and db.get_meta("embed_dim") == str(dim)
    if same and db.has_table(VEC_TABLE):
        return False
    had = bool(db.scalar("SELECT count(*) FROM vectors", default=0)) or db.has_table(VEC_TABLE)
    with db.transaction():
        db.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
        db.execute("DELETE FROM vectors")
        db.execute(
            f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )
        db.set_meta("embed_model", model_id)
        db.set_meta("embed_dim", str(dim))
        note_removal(db)
    return had and not same


def note_removal(db: Database) -> None:
    """Count a removal of vectors (inside the removing transaction): readers that keep a copy of
    the vectors compare this count to know when to drop rows (added rows have larger ids)."""
    db.set_meta(REMOVALS_KEY, str(int(db.get_meta(REMOVALS_KEY) or 0) + 1))


def collect_garbage(db: Database) -> int:
    """Delete vectors nothing stands for any more (see `store.embed_docs.obsolete_vectors`)."""
    if not db.has_table(VEC_TABLE):
        return 0
    with db.transaction():
        stale = embed_docs.obsolete_vectors(db)
        for i in range(0, len(stale), 500):
            part = stale[i : i + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid IN ({marks})", part)
            db.execute(f"DELETE FROM vectors WHERE id IN ({marks})", part)
        if stale:
            note_removal(db)
    return len(stale)


def pending_chunks(db: Database, paths: Sequence[str] | None = None) -> tuple[list[tuple[int, str]], int]:
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
        f"SELECT min(c.id), c.hash, length(c.header) + length(c.text) AS n, count(*) FROM chunks c "
        f"WHERE {where}NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = c.hash) "
        f"AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.chunk_hash = c.hash AND d.current = 1) "
        f"GROUP BY c.hash ORDER BY n",
        params,
    )
    return [(int(r[0]), str(r[1])) for r in rows], sum(int(r[3]) for r in rows)


def chunk_texts(db: Database, ids: Sequence[int]) -> dict[int, str]:
    return {i: h + t for i, (h, t) in chunk_parts(db, ids).items()}


def chunk_parts(db: Database, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """(header, code) of chunks by id."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {int(i): (str(h), str(t)) for i, h, t in db.execute(
        f"SELECT id, header, text FROM chunks WHERE id IN ({marks})", tuple(ids))}


def write_vectors(db: Database, hashes: Sequence[str], vecs: np.ndarray, model_id: str) -> int:
    """Store vectors for chunk hashes (skipping hashes another writer stored meanwhile)."""
    written = 0
    with db.transaction():
        for h, v in zip(hashes, vecs, strict=True):
            db.execute("INSERT OR IGNORE INTO vectors(hash, model) VALUES(?, ?)", (h, model_id))
            if db.conn.changes() == 0:
                continue
            vid = db.conn.last_insert_rowid()
            db.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES(?, ?)", (vid, to_blob(v)))
            written += 1
    return written



def all_embedded(db: Database) -> bool:
    """Every chunk has a vector (its own, or its summary document's) and every vector a chunk or
    a current document."""
    if db.scalar("SELECT 1 FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = c.hash) "
                 "AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.chunk_hash = c.hash AND d.current = 1) LIMIT 1"):
        return False
    return not db.scalar("SELECT 1 FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = v.hash) "
                         "AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.key = v.hash) LIMIT 1")


def chunk_count(db: Database, paths: Sequence[str] | None = None) -> int:
    """How many chunks the index has, or the files `paths` have."""
    if paths is None:
        return int(db.scalar("SELECT count(*) FROM chunks", default=0))
    marks = ",".join("?" * len(paths)) or "NULL"
    return int(db.scalar(f"SELECT count(*) FROM chunks WHERE file_id IN "
                         f"(SELECT id FROM files WHERE path IN ({marks}))", tuple(paths), default=0))


def vectors_for_hashes(db: Database, hashes: Iterable[str]) -> dict[str, np.ndarray]:
    """Stored vectors of chunk hashes (those that have one)."""
    out: dict[str, np.ndarray] = {}
    if not db.has_table(VEC_TABLE):
        return out
    hs = list(dict.fromkeys(hashes))
    for i in range(0, len(hs), 400):
        part = hs[i : i + 400]
        marks = ",".join("?" * len(part))
        for h, blob in db.execute(
            f"SELECT v.hash, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id "
            f"WHERE v.hash IN ({marks})", tuple(part)):
            out[str(h)] = np.frombuffer(blob, dtype=np.float32)
    return out


def vectors_after(db: Database, after: int) -> list[tuple[int, bytes]]:
    """(vector id, float32 blob) of the vectors with an id above `after`, by id."""
    return [(int(i), blob) for i, blob in db.execute(
        f"SELECT v.id, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id "
        f"WHERE v.id > ? ORDER BY v.id", (after,))]


def vector_ids(db: Database) -> list[int]:
    return [int(r[0]) for r in db.execute("SELECT id FROM vectors")]


def max_vector_id(db: Database) -> int:
    """The largest vector id (ids only grow: a larger one means vectors were added); 0 for none."""
    return int(db.scalar("SELECT coalesce(max(id), 0) FROM vectors", default=0))


def vector_count(db: Database) -> int:
    return int(db.scalar("SELECT count(*) FROM vectors", default=0))
