"""The SQLite backend of `StoreBackend`: today's index file (`Database`), its reads (`read.py`)
and writes (`write.py`) behind the interface, plus FTS5 and sqlite-vec searches."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from coderag_tui.models import EdgeRef, IndexCounts, IndexStatus, UnitRef
from coderag_tui.store import descriptions, read, retrieval_reads, tracked, write
from coderag_tui.store.backend import KEYWORD_WEIGHTS, ChunkHit, ContextReads
from coderag_tui.store.db import Database, open_database
from coderag_tui.store.graph_edges import SqliteGraph
from coderag_tui.store.write import FileMeta, FileRows

VEC_TABLE = "vec_chunks"  # the embedder's sqlite-vec table (rowid = vectors.id)

# A call resolved by name alone (same SQL in both dialects): a definition of the name in the
# caller's file, else the index's only definition of it.
LINK_SAME_FILE = (
    "UPDATE edges SET dst = (SELECT min(u.id) FROM units u WHERE u.file_id = edges.src_file "
    "AND u.name = edges.name AND u.kind <> 'file') WHERE kind = 'CALLS' AND dst IS NULL AND EXISTS "
    "(SELECT 1 FROM units u WHERE u.file_id = edges.src_file AND u.name = edges.name AND u.kind <> 'file')"
)
LINK_UNIQUE = (
    "UPDATE edges SET dst = (SELECT min(u.id) FROM units u WHERE u.name = edges.name AND u.kind <> 'file') "
    "WHERE kind = 'CALLS' AND dst IS NULL AND "
    "(SELECT count(*) FROM units u WHERE u.name = edges.name AND u.kind <> 'file') = 1"
)


def fts_expression(terms: Sequence[str]) -> str:
    """An FTS5 expression OR-ing the words, each quoted (no query text is read as syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms if t.strip())


class SqliteStore:
    """`StoreBackend` over one SQLite index file."""

    backend = "sqlite"

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, path: Path) -> SqliteStore:
        return cls(open_database(path))

    @property
    def schema_version(self) -> int:
        return self.db.schema_version

    def transaction(self) -> AbstractContextManager[object]:
        return self.db.transaction()

    def get_meta(self, key: str, default: str = "") -> str:
        return self.db.get_meta(key, default)

    def set_meta(self, key: str, value: str) -> None:
        with self.db.transaction():
            self.db.set_meta(key, value)

    # ---------------------------------------------------------------- writes
    def write_file(self, rows: FileRows, meta: FileMeta) -> int:
        with self.db.transaction():
            file_id, _ = write.write_file(self.db, rows, meta)
        return file_id

    def delete_file(self, path: str) -> bool:
        with self.db.transaction():
            return write.delete_file(self.db, path) is not None

    def set_vectors(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> int:
        dim = int(vectors.shape[1]) if len(vectors) else 0
        written = 0
        with self.db.transaction():
            if self.db.get_meta("embed_model") != model or not self.db.has_table(VEC_TABLE):
                # the embedder's layout: one model per index, its vectors in one vec0 table
                self.db.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
                self.db.execute("DELETE FROM vectors")
                self.db.execute(f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(embedding float[{dim}] "
                                "distance_metric=cosine)")
                self.db.set_meta("embed_model", model)
                self.db.set_meta("embed_dim", str(dim))
            for h, v in zip(hashes, vectors, strict=True):
                self.db.execute("INSERT OR IGNORE INTO vectors(hash, model) VALUES(?, ?)", (h, model))
                if self.db.conn.changes() == 0:
                    continue
                blob = np.ascontiguousarray(v, dtype=np.float32).tobytes()
                self.db.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES(?, ?)",
                                (self.db.conn.last_insert_rowid(), blob))
                written += 1
        return written

    def chunks_without_vector(self, model: str, limit: int = 256) -> list[tuple[str, str]]:
        if self.db.get_meta("embed_model") != model:  # one model per file: none of its vectors yet
            rows = self.db.rows("SELECT hash, min(header || text) FROM chunks GROUP BY hash LIMIT ?", (limit,))
        else:
            rows = self.db.rows(
                "SELECT c.hash, min(c.header || c.text) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v "
                "WHERE v.hash = c.hash AND v.model = ?) GROUP BY c.hash LIMIT ?", (model, limit))
        return [(str(h), str(t)) for h, t in rows]

    def link_calls(self) -> int:
        with self.db.transaction():
            self.db.execute(LINK_SAME_FILE)
            n = self.db.conn.changes()
            self.db.execute(LINK_UNIQUE)
            return n + self.db.conn.changes()

    def graph(self) -> SqliteGraph:
        return SqliteGraph(self.db)

    def refresh_statistics(self) -> None:
        """Nothing: FTS5 and SQLite's planner need no counts refreshed after a build."""

    def skips(self) -> dict[str, tuple[str, int, int]]:
        return tracked.skips(self.db)

    def replace_skips(self, skipped: dict[str, tuple[str, int, int]]) -> None:
        with self.db.transaction():
            tracked.replace_skips(self.db, skipped)

    # ---------------------------------------------------------------- searches
    def keyword_search(self, terms: Sequence[str], limit: int = 60) -> list[ChunkHit]:
        expr = fts_expression(terms)
        if not expr or limit <= 0:
            return []
        rank = "bm25(" + ", ".join(str(w) for w in KEYWORD_WEIGHTS.values()) + ")"
        rows = self.db.rows(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.unit_id, m.rank FROM (SELECT rowid, rank "
            "FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) m "
            "JOIN chunks c ON c.id = m.rowid JOIN files f ON f.id = c.file_id ORDER BY m.rank, c.id",
            (expr, rank, limit))
        return [ChunkHit(int(i), str(p), int(s), int(e), u, -float(r)) for i, p, s, e, u, r in rows]

    def vector_search(self, vector: np.ndarray, model: str, limit: int = 60) -> list[ChunkHit]:
        if limit <= 0 or not self.db.has_table(VEC_TABLE) or self.db.get_meta("embed_model") != model:
            return []
        blob = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
        rows = self.db.rows(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.unit_id, n.distance FROM (SELECT rowid, distance "
            f"FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ?) n JOIN vectors v ON v.id = n.rowid "
            "JOIN chunks c ON c.hash = v.hash JOIN files f ON f.id = c.file_id ORDER BY n.distance, c.id LIMIT ?",
            (blob, min(limit, 4096), limit))
        return [ChunkHit(int(i), str(p), int(s), int(e), u, 1.0 - float(d)) for i, p, s, e, u, d in rows]

    def find_symbols(self, query: str, limit: int = 20, kinds: Sequence[str] | None = None,
                     fuzzy: bool = True) -> list[UnitRef]:
        return read.find_symbols(self.db, query, limit, kinds, fuzzy)

    # ---------------------------------------------------------------- graph and rows
    def callers(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return read.callers(self.db, unit_ids, kinds)

    def callees(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return read.callees(self.db, unit_ids, kinds)

    def get_unit(self, unit_id: int) -> UnitRef | None:
        return read.get_unit(self.db, unit_id)

    def file_outline(self, path: str) -> list[UnitRef]:
        return read.file_outline(self.db, path)

    def files(self) -> list[str]:
        return [str(p) for (p,) in self.db.rows("SELECT path FROM files ORDER BY path")]

    def file_hashes(self) -> dict[str, str]:
        return {str(p): str(h) for p, h in self.db.rows("SELECT path, hash FROM files")}

    def edge_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM edges", default=0))

    def counts(self) -> IndexCounts:
        return read.counts(self.db)

    def status(self, repo_root: str) -> IndexStatus:
        return read.status(self.db, repo_root)

    # ---------------------------------------------------------------- context reads
    def children(self, unit_id: int) -> list[UnitRef]:
        return read.children(self.db, unit_id)

    def file_imports(self, path: str) -> list[str]:
        return retrieval_reads.file_imports(self.db, path)

    def file_constants(self, path: str, limit: int = 20) -> list[str]:
        return retrieval_reads.file_constants(self.db, path, limit)

    def unit_bases(self, unit_id: int) -> list[str]:
        return bases_of(retrieval_reads.unit_bases(self.db, unit_id))

    def summary_texts(self, units: Sequence[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
        return descriptions.summary_texts(self.db, units) if units else {}

    def file_chunk_texts(self, path: str) -> list[tuple[int, str]]:
        return retrieval_reads.file_chunk_texts(self.db, path)

    def file_hash(self, path: str) -> str | None:
        return retrieval_reads.file_hash(self.db, path)

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        return read.units_at(self.db, path, line)

    def importers(self, path: str) -> list[UnitRef]:
        return read.importers(self.db, path)

    def file_facts(self, path: str) -> tuple[str, int, bool] | None:
        return read.file_facts(self.db, path)

    def unit_summaries(self, path: str) -> dict[int, str]:
        return read.file_summaries(self.db, path)

    def file_index_states(self) -> dict[str, tuple[str, int, int]]:
        return read.file_index_states(self.db, self.db.get_meta("embed_model"))

    def skip_reasons(self) -> dict[str, str]:
        return read.skip_reasons(self.db)

    def close(self) -> None:
        self.db.close()


def bases_of(stored: str | None) -> list[str]:
    """A unit's bases column (a JSON list) as names; [] when empty or unreadable."""
    try:
        found = json.loads(stored) if stored else []
    except ValueError:
        return []
    return [str(b) for b in found] if isinstance(found, list) else []


def context_reads(source: Database | ContextReads) -> ContextReads:
    """The context reads of a store, or of a SQLite index file's connection."""
    return SqliteStore(source) if isinstance(source, Database) else source
