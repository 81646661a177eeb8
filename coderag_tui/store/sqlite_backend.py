"""The SQLite backend: one index file (`db.Database`: apsw, sqlite-vec, WAL, migrations) and what
has no common SQL with PostgreSQL done SQLite's way: keyword rows in the FTS5 tables
`chunks_fts` and `descriptions_fts`, vectors in the sqlite-vec table `vec_chunks` (rowid =
`vectors.id`), rows in bulk by `executemany`."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from coderag_tui.models import SearchFilters
from coderag_tui.store import sql as q
from coderag_tui.store.backend import KEYWORD_WEIGHTS
from coderag_tui.store.db import Database, open_database
from coderag_tui.store.embeddings import (
    KNN_CHUNKS,
    VEC_TABLE,
    VECTOR_MODEL,
    VECTOR_STATE,
    note_removal,
)
from coderag_tui.store.filters import filter_sql, has_filters

COLUMN_WEIGHTS = tuple(KEYWORD_WEIGHTS.values())  # FTS5's bm25() weights of the keyword columns
NAMES_ONLY = (1.0, 0.0, 0.0, 0.0, 0.0)
CHUNK_COLS = "c.id, c.unit_id, c.file_id, c.start_line, c.end_line"
# FTS5 keeps new terms in memory and writes a segment whenever they pass `hashsize` (1 MB by
# default): more segments, more merging. 16 MB holds a whole write batch (one segment each).
_FTS_HASHSIZE = 16 * 1024 * 1024


def fts_expression(terms: Sequence[str]) -> str:
    """Words OR-ed, each quoted as an FTS5 string (a quote inside is doubled; a NUL, which would
    end FTS5's string unterminated, is a separator): no query text is read as FTS5 syntax."""
    cleaned = (t.replace("\x00", " ") for t in terms)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in cleaned if t.strip())


def _blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


class SqliteStore(Database):
    """The store of one SQLite index file."""

    backend = "sqlite"

    def reader(self) -> SqliteStore:
        """A read-only connection to the same file for the calling thread (this one on its own
        thread; opened once per thread, closed with this one), so that a search can read on two
        cores at once."""
        ident = threading.get_ident()
        if ident == self._owner:
            return self
        with self._readers_lock:
            db = self._readers.get(ident)
        if db is None:
            db = open_database(self.path, readonly=True)
            with self._readers_lock:
                self._readers[ident] = db
        return db

    @property
    def location(self) -> str:
        return str(self.path)

    def size_bytes(self) -> int:
        size = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(str(self.path) + suffix)
        return size

    def set_packages(self, packages: Sequence[dict[str, Any]]) -> None:
        """(An index file's packages are read from its folder when a workspace links it.)"""

    def packages(self) -> list[dict[str, Any]]:
        return []

    # ---------------------------------------------------------------- bulk writes
    def insert_chunks(self, file_id: int, rows: Sequence[Sequence[Any]],
                      keyword_rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """A file's chunks (id, file id, unit id, start, end, node kinds, scope, hash, header, text)
        and their keyword rows (names, path words, signatures, docstrings, code sub-words)."""
        self.executemany(
            "INSERT INTO chunks(id, file_id, unit_id, start_line, end_line, node_kinds, scope, hash, header, text) "
            "VALUES(?,?,?,?,?,?,?,?,?,?)", rows)
        self.executemany(
            "INSERT INTO chunks_fts(rowid, names, path, signature, doc, code) VALUES(?,?,?,?,?,?)",
            [(c[0], names, path, sig, doc, c[9] + "\n" + extra if extra else c[9])
             for c, (names, path, sig, doc, extra) in zip(rows, keyword_rows, strict=True)])

    def delete_keyword_rows(self, file_id: int) -> None:
        self.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id=?)", (file_id,))

    def clear_keyword_rows(self) -> None:
        self.execute("DELETE FROM chunks_fts")

    def tune_keywords(self) -> None:
        """Set FTS5's pending-terms budget (a setting stored in the index; done once)."""
        if self.scalar("SELECT v FROM chunks_fts_config WHERE k='hashsize'") != _FTS_HASHSIZE:
            self.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('hashsize', ?)", (_FTS_HASHSIZE,))

    def secondary_indexes(self, tables: Sequence[str]) -> list[tuple[str, str, str]]:
        """(name, table, CREATE statement) of the tables' indexes."""
        return [(str(n), str(t), str(s)) for n, t, s in self.rows_in(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL "
            "AND tbl_name IN ({marks}) ORDER BY name", list(tables))]

    def bulk_mode(self, on: bool) -> None:
        """(Nothing differs for SQLite.)"""

    def chunk_state(self) -> tuple[int, int]:
        """(number of chunks, largest chunk id): a change of either means new term counts."""
        # two statements: together the aggregates scan the whole table (~20 ms at 200k chunks),
        # apart SQLite answers each from a b-tree edge or its count shortcut (~0.3 ms)
        return (int(self.scalar("SELECT count(*) FROM chunks") or 0),
                int(self.scalar("SELECT coalesce(max(id), 0) FROM chunks") or 0))

    def refresh_statistics(self, full: bool = False) -> None:
        """(FTS5 and SQLite's planner need nothing counted again after a build.)"""

    # ---------------------------------------------------------------- keyword search
    def keyword_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each word (the words the index holds; fts5vocab reads a word's
        whole doclist to count it)."""
        if not self.scalar("SELECT 1 FROM temp.sqlite_master WHERE name='chunks_vocab'"):
            self.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab USING fts5vocab(main, chunks_fts, row)")
        return {str(t): int(n) for t, n in self.rows_in(
            "SELECT term, doc FROM temp.chunks_vocab WHERE term IN ({marks})", list(terms))}

    def _bm25(self, expr: str, weights: Sequence[float], limit: int,
              filters: SearchFilters | None) -> list[q.Row]:
        if not expr or limit <= 0:
            return []
        rank = "bm25(" + ", ".join(str(float(w)) for w in weights) + ")"
        if not has_filters(filters):
            found = self.rows(
                f"SELECT {CHUNK_COLS}, m.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
                f"AND rank MATCH ? ORDER BY rank LIMIT ?) m JOIN chunks c ON c.id = m.rowid ORDER BY m.rank",
                (expr, rank, limit))
        else:
            cond, params = filter_sql(filters)
            found = self.rows(
                f"SELECT {CHUNK_COLS}, m.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? "
                f"AND rank MATCH ?) m JOIN chunks c ON c.id = m.rowid JOIN files f ON f.id = c.file_id "
                f"WHERE {cond} ORDER BY m.rank LIMIT ?", (expr, rank, *params, limit))
        return [(*r[:5], -float(r[5])) for r in found]

    def keyword_rows(self, terms: Sequence[str], limit: int, filters: SearchFilters | None = None,
                     names_only: bool = False) -> list[q.Row]:
        """(chunk id, unit id, file id, start, end, score) of the chunks best matching any of the
        words, best first (BM25 over the weighted columns; `names_only`: the names column)."""
        return self._bm25(fts_expression(terms), NAMES_ONLY if names_only else COLUMN_WEIGHTS, limit, filters)

    def name_pair_rows(self, pairs: Sequence[tuple[str, str]], limit: int,
                       filters: SearchFilters | None = None) -> list[q.Row]:
        """Chunks whose names column holds one of the word pairs as a phrase, best first."""
        expr = " OR ".join('names : "' + f"{a} {b}".replace('"', '""') + '"' for a, b in pairs)
        return self._bm25(expr, NAMES_ONLY, limit, filters)

    def word_chunks(self, words: Sequence[str], limit: int, offset: int = 0) -> list[tuple[str, int, str]]:
        expr = fts_expression(words).replace(" OR ", " AND ")
        if not expr or limit <= 0:
            return []
        return [(str(p), int(s), str(t)) for p, s, t in self.rows(
            "SELECT f.path, c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN "
            "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid LIMIT ? OFFSET ?) ORDER BY c.id",
            (expr, limit, offset))]

    # ---------------------------------------------------------------- descriptions' keyword rows
    def clear_description_rows(self) -> None:
        self.execute("INSERT INTO descriptions_fts(descriptions_fts) VALUES('delete-all')")

    def delete_description_rows(self, unit_ids: Sequence[int]) -> None:
        ids = list(unit_ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            self.execute(f"DELETE FROM descriptions_fts WHERE rowid IN ({q.marks(len(part))})", part)

    def insert_description_rows(self, rows: Sequence[tuple[int, str]]) -> None:
        self.delete_description_rows([uid for uid, _ in rows])
        self.executemany("INSERT INTO descriptions_fts(rowid, text) VALUES(?,?)", rows)

    def description_search(self, terms: Sequence[str], limit: int, filters: SearchFilters | None = None) -> list[int]:
        """Unit ids whose description holds any of the words and passes the filters, best first."""
        expr = fts_expression(terms)
        if not expr or limit <= 0:
            return []
        cond, params = filter_sql(filters)
        if cond:
            rows = self.rows(
                "SELECT m.rowid FROM (SELECT rowid, rank FROM descriptions_fts WHERE descriptions_fts MATCH ?) m "
                "JOIN units u ON u.id=m.rowid JOIN files f ON f.id=u.file_id "
                f"WHERE {cond} ORDER BY m.rank LIMIT ?", (expr, *params, limit))
        else:
            rows = self.rows("SELECT d.rowid FROM descriptions_fts d JOIN units u ON u.id=d.rowid "
                             "WHERE descriptions_fts MATCH ? ORDER BY d.rank LIMIT ?", (expr, limit))
        return [int(r[0]) for r in rows]

    # ---------------------------------------------------------------- vectors
    def vec_ready(self, model_id: str | None = None) -> bool:
        """The index has a vector table (for `model_id`, when given)."""
        if not self.has_table(VEC_TABLE):
            return False
        return model_id is None or self.get_meta("embed_model") == model_id

    def ensure_model_table(self, model_id: str, dim: int) -> bool:
        """Make the vector table fit the model. Returns True when old vectors were dropped."""
        same = self.get_meta("embed_model") == model_id and self.get_meta("embed_dim") == str(dim)
        if same and self.has_table(VEC_TABLE):
            return False
        had = bool(self.scalar("SELECT count(*) FROM vectors", default=0)) or self.has_table(VEC_TABLE)
        with self.transaction():
            self.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
            self.execute("DELETE FROM vectors")
            self.execute(f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(embedding float[{dim}] distance_metric=cosine)")
            self.set_meta("embed_model", model_id)
            self.set_meta("embed_dim", str(dim))
            note_removal(self)
        return had and not same

    def write_vectors(self, hashes: Sequence[str], vecs: np.ndarray, model_id: str) -> int:
        """Store vectors for chunk hashes (skipping hashes another writer stored meanwhile)."""
        written = 0
        with self.transaction():
            for h, v in zip(hashes, vecs, strict=True):
                if not self.changed("INSERT INTO vectors(hash, model) VALUES(?, ?) ON CONFLICT DO NOTHING",
                                    (h, model_id)):
                    continue
                self.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES(?, ?)",
                             (self.conn.last_insert_rowid(), _blob(v)))
                written += 1
        return written

    def bulk_vectors(self, expected: int) -> contextlib.AbstractContextManager[None]:
        """(sqlite-vec keeps no index to build again.)"""
        return contextlib.nullcontext()

    def delete_vectors(self, ids: Sequence[int]) -> None:
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            self.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid IN ({q.marks(len(part))})", part)
            self.execute(f"DELETE FROM vectors WHERE id IN ({q.marks(len(part))})", part)

    def has_vectors(self) -> bool:
        """Whether the index holds any vector (a count would read the whole table)."""
        return self.has_table(VEC_TABLE) and bool(self.scalar("SELECT 1 FROM vectors LIMIT 1"))

    def vector_state(self) -> tuple[str, str, int] | None:
        if not self.has_table(VEC_TABLE):
            return None
        row = self.one(VECTOR_STATE)
        return (str(row[1] or ""), str(row[2] or ""), int(row[3] or 0)) if row else ("", "", 0)

    def knn_chunk_rows(self, vec: np.ndarray, k: int) -> list[tuple[Any, ...]]:
        if k <= 0 or not self.has_table(VEC_TABLE):
            return []
        return self.rows(
            f"WITH nn(hash, d) AS MATERIALIZED (SELECT v.hash, n.distance FROM (SELECT rowid, distance FROM {VEC_TABLE} "
            f"WHERE embedding MATCH ? AND k = ?) n JOIN vectors v ON v.id = n.rowid) {KNN_CHUNKS}",
            (_blob(vec), min(k, 4096)))

    def vector_model(self) -> str:
        if not self.has_table(VEC_TABLE):
            return ""
        return str(self.scalar(VECTOR_MODEL, default=""))

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors of chunk hashes (those that have one)."""
        if not self.has_table(VEC_TABLE):
            return {}
        return {str(h): np.frombuffer(blob, dtype=np.float32) for h, blob in self.rows_in(
            f"SELECT v.hash, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id "
            "WHERE v.hash IN ({marks})", list(dict.fromkeys(hashes)), batch=400)}

    def vectors_after(self, after: int) -> list[tuple[int, bytes]]:
        """(vector id, float32 blob) of the vectors with an id above `after`, by id."""
        return [(int(i), blob) for i, blob in self.execute(
            f"SELECT v.id, t.embedding FROM vectors v JOIN {VEC_TABLE} t ON t.rowid = v.id "
            "WHERE v.id > ? ORDER BY v.id", (after,))]

    def vector_blobs(self, ids: Sequence[int]) -> dict[int, bytes]:
        """vector id -> its stored float32 blob, for the ids that have one."""
        return dict(self.rows_in(f"SELECT rowid, embedding FROM {VEC_TABLE} WHERE rowid IN ({{marks}})", list(ids)))

    def knn_rows(self, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """(chunk hash, cosine distance) of the k vectors nearest `vec` (a sqlite-vec scan)."""
        if k <= 0 or not self.has_table(VEC_TABLE):
            return []
        return [(str(h), float(d)) for h, d in self.rows(
            f"SELECT v.hash, n.distance FROM (SELECT rowid, distance FROM {VEC_TABLE} "
            f"WHERE embedding MATCH ? AND k = ?) n JOIN vectors v ON v.id = n.rowid ORDER BY n.distance",
            (_blob(vec), min(k, 4096)))]
