"""The PostgreSQL backend of `StoreBackend`: rows by COPY in one transaction per file, keyword
search with BM25 impacts in ordered postings (`keywords.py`), vector KNN with pgvector's HNSW."""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from coderag_tui.errors import StoreError
from coderag_tui.models import EdgeRef, IndexCounts, UnitRef
from coderag_tui.store import confidence
from coderag_tui.store.backend import ChunkHit, redact
from coderag_tui.store.postgres import keywords, lookups, repos
from coderag_tui.store.postgres.connect import connect_live, schema_version
from coderag_tui.store.postgres.graph import PgGraph
from coderag_tui.store.postgres.reads import READS, PostgresReads
from coderag_tui.store.write import FileMeta, FileRows

# a chunk's code column keeps its first words up to this
_MAX_KEYWORD_CHARS = 400_000

VECTOR_DIM = 384  # the `vector(384)` column of migration 1


def words(*texts: str) -> str:
    """Lower-cased words of the texts, space-separated (what the keyword columns hold)."""
    return " ".join(keywords.WORD.findall(" ".join(texts).lower()))[:_MAX_KEYWORD_CHARS]


def _clean(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL (a repository's file may): it becomes U+FFFD."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def vector_literal(vec: np.ndarray) -> str:
    return "[" + ",".join(map(repr, np.asarray(vec, dtype=np.float32).ravel().tolist())) + "]"


class PostgresStore(repos.RepoViews, PostgresReads):
    """`StoreBackend` over one repository of a PostgreSQL database (with the pgvector extension),
    or a read-only view across several (`across`; repos.py)."""

    backend = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any], url: str, repo_id: int | None = repos.DEFAULT_REPO_ID,
                 scope: Sequence[int] | None = None) -> None:
        self.conn = conn
        self.url = redact(url)
        self.repo_id = repo_id  # the repository written (None: a view, read-only)
        self.scope = (repo_id,) if repo_id is not None else None if scope is None else tuple(scope)

    @property
    def schema_version(self) -> int:
        return schema_version(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[object]:
        with self.conn.transaction():  # nested: a savepoint
            yield self

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, [_clean(p) for p in params]).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, [_clean(p) for p in params]).fetchone()

    def _copy(self, table: str, columns: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([_clean(v) for v in row])

    def get_meta(self, key: str, default: str = "") -> str:
        row = self._one("SELECT value FROM meta WHERE key = %s", (self._meta_key(key),))
        return default if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta(key, value) VALUES(%s, %s) "
                          "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (self._meta_key(key), value))

    # ---------------------------------------------------------------- writes
    def write_file(self, rows: FileRows, meta: FileMeta) -> int:
        now = time.time()
        with self.conn.transaction():
            found = self._one("SELECT id FROM files WHERE repo_id = %s AND path = %s FOR UPDATE",
                              (self._writing(), meta.path))
            file_unit_id = None
            fields = (rows.language, meta.hash, meta.size, meta.mtime_ns, rows.lines, bool(rows.structured),
                      bool(rows.has_errors), _clean(meta.error), now)
            if found is not None:
                file_id = int(found[0])
                unit = self._one("SELECT id FROM units WHERE file_id = %s AND kind = 'file'", (file_id,))
                file_unit_id = None if unit is None else int(unit[0])
                self._remove_rows(file_id, meta.path)
                self.conn.execute("UPDATE files SET language=%s, hash=%s, size=%s, mtime_ns=%s, lines=%s, "
                                  "structured=%s, has_errors=%s, error=%s, indexed_at=%s WHERE id=%s",
                                  (*fields, file_id))
            else:
                self.set_meta("files_generation", secrets.token_hex(8))
                new = self._one("INSERT INTO files(repo_id, path, language, hash, size, mtime_ns, lines, structured, "
                                "has_errors, error, indexed_at) VALUES(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                                (self._writing(), _clean(meta.path), *fields))
                assert new is not None
                file_id = int(new[0])
            self._insert_rows(file_id, rows, file_unit_id)
        return file_id

    def _ids(self, sequence: str, n: int) -> list[int]:
        if n <= 0:
            return []
        return [int(r[0]) for r in self._rows(f"SELECT nextval('{sequence}') FROM generate_series(1, %s)", (n,))]

    def _insert_rows(self, file_id: int, rows: FileRows, file_unit_id: int | None) -> None:
        ids = self._ids("unit_ids", len(rows.units) - (file_unit_id is not None))
        if file_unit_id is not None and rows.units:
            ids.insert(0, file_unit_id)  # a re-indexed file keeps its file unit (edges into it stay)
        self._copy("units", "id, file_id, parent_id, kind, name, qualname, signature, params, return_type, "
                   "decorators, docstring, bases, start_line, end_line, is_test",
                   ((ids[r[0]], file_id, None if r[1] is None else ids[r[1]], *r[2:13], bool(r[13]))
                    for r in rows.units))
        self._copy("edges", "src, src_file, dst, kind, name, receiver, line, argc",
                   ((ids[s], file_id, None if d is None else ids[d], k, n, r, ln, a)
                    for s, d, k, n, r, ln, a in rows.edges))
        if rows.imports:
            self._copy("imports", "file_id, module, names, line", ((file_id, *i) for i in rows.imports))
        chunk_ids = self._ids("chunk_ids", len(rows.chunks))
        self._copy("chunks", "id, file_id, unit_id, start_line, end_line, node_kinds, scope, hash, header, text, "
                   "kw_names, kw_meta, kw_code",
                   ((cid, file_id, ids[c[0]], *c[1:], words(names), words(path, sig, doc), words(c[7], extra))
                    for cid, c, (names, path, sig, doc, extra) in zip(chunk_ids, rows.chunks, rows.fts, strict=True)))
        if chunk_ids:
            self.conn.execute(keywords.INSERT_POSTINGS, (file_id,))

    def _remove_rows(self, file_id: int, path: str) -> None:
        """Delete a file's rows; edges from other files into its definitions lose their target
        (calls and bases keep what they pointed to as `orphan`), their TESTS edges go."""
        self.conn.execute("DELETE FROM edges WHERE kind = 'TESTS' AND src_file <> %s AND dst IN "
                          "(SELECT id FROM units WHERE file_id = %s AND kind <> 'file')", (file_id, file_id))
        self.conn.execute(
            "UPDATE edges e SET dst = NULL, orphan = CASE WHEN e.kind IN ('CALLS', 'INHERITS', 'IMPLEMENTS') "
            "THEN u.qualname || ' (' || %s || ':' || u.start_line || ')' ELSE e.orphan END "
            "FROM units u WHERE u.id = e.dst AND u.file_id = %s AND u.kind <> 'file' AND e.src_file <> %s",
            (_clean(path), file_id, file_id))
        self.conn.execute(keywords.DELETE_POSTINGS, (file_id,))
        for table in ("edges", "chunks", "imports", "units"):
            column = "src_file" if table == "edges" else "file_id"
            self.conn.execute(f"DELETE FROM {table} WHERE {column} = %s", (file_id,))

    def delete_file(self, path: str) -> bool:
        with self.conn.transaction():
            found = self._one("SELECT id FROM files WHERE repo_id = %s AND path = %s FOR UPDATE",
                              (self._writing(), _clean(path)))
            if found is None:
                return False
            file_id = int(found[0])
            unit = self._one("SELECT id FROM units WHERE file_id = %s AND kind = 'file'", (file_id,))
            self._remove_rows(file_id, path)
            self.conn.execute("DELETE FROM files WHERE id = %s", (file_id,))
            if unit is not None:  # edges into the file itself: imports re-resolve, TESTS are re-derived
                self.conn.execute("UPDATE edges SET dst = NULL WHERE dst = %s AND kind = 'IMPORTS'", (unit[0],))
                self.conn.execute("DELETE FROM edges WHERE dst = %s AND kind = 'TESTS'", (unit[0],))
            self.set_meta("files_generation", secrets.token_hex(8))
        return True

    def set_vectors(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> int:
        if len(vectors) and vectors.shape[1] != VECTOR_DIM:
            raise StoreError(f"the model {model} gives {vectors.shape[1]}-dimensional vectors; the PostgreSQL "
                             f"index holds {VECTOR_DIM}", "use a 384-dimensional model ([embed] model)")
        with self.conn.transaction():
            self.set_meta("embed_model", model)
            # COPY into a scratch table, then one INSERT that skips hashes already stored
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS new_vectors(hash text, embedding vector(384)) "
                              "ON COMMIT DELETE ROWS")
            self._copy("new_vectors", "hash, embedding",
                       ((h, vector_literal(v)) for h, v in zip(hashes, vectors, strict=True)))
            cur = self.conn.execute("INSERT INTO vectors(hash, model, embedding) SELECT DISTINCT ON (hash) hash, %s, "
                                    "embedding FROM new_vectors ON CONFLICT DO NOTHING", (model,))
            return max(cur.rowcount, 0)

    def chunks_without_vector(self, model: str, limit: int = 256) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT c.hash, min(c.header || c.text) FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE {self._in_scope('f')} AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.hash = c.hash AND v.model = %s) GROUP BY c.hash LIMIT %s", (model, limit))
        return [(str(h), str(t)) for h, t in rows]

    def link_calls(self) -> int:
        """(Also refreshes the statistics, as `refresh_statistics`.)"""
        with self.conn.transaction():
            linked = sum(max(self.conn.execute(sql, (self._writing(),)).rowcount, 0)
                         for sql in (repos.LINK_SAME_FILE_IN_REPO, repos.LINK_UNIQUE_IN_REPO))
        self.refresh_statistics()
        return linked

    def graph(self) -> PgGraph:
        """The graph rows of this store's repositories (resolution keeps to them)."""
        return PgGraph(self.conn, self.url, self._in_scope("f"))

    def refresh_statistics(self) -> None:
        """(Run once after a build:) the planner's statistics, without which it guesses the
        share of chunks a word matches and may scan them all, and the keyword counts."""
        self.conn.execute("ANALYZE files, units, chunks, edges, keyword_postings")
        self._refresh_keyword_df()

    def skips(self) -> dict[str, tuple[str, int, int]]:
        return {str(p): (str(r), int(s), int(m)) for p, r, s, m in
                self._rows(f"SELECT path, reason, size, mtime_ns FROM skips s WHERE {self._in_scope('s')}")}

    def replace_skips(self, skipped: dict[str, tuple[str, int, int]]) -> None:
        repo_id = self._writing()
        with self.conn.transaction():
            self.conn.execute("DELETE FROM skips WHERE repo_id = %s", (repo_id,))
            self._copy("skips", "repo_id, path, reason, size, mtime_ns",
                       ((repo_id, p, r, s, m) for p, (r, s, m) in sorted(skipped.items())))

    def _refresh_keyword_df(self) -> None:
        keywords.refresh_counts(self.conn, self.get_meta, self.set_meta)

    # ---------------------------------------------------------------- searches
    def keyword_search(self, terms: Sequence[str], limit: int = 60) -> list[ChunkHit]:
        return [ChunkHit(int(i), str(p), int(s), int(e), u, float(r))
                for i, p, s, e, u, r in keywords.search(self._rows, terms, limit, scope=self._keyword_scope())]

    def vector_search(self, vector: np.ndarray, model: str, limit: int = 60) -> list[ChunkHit]:
        if limit <= 0:
            return []
        literal = vector_literal(vector)
        with self.conn.transaction():  # the search width applies to this query alone
            self.conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(40, min(limit, 1000))),))
            rows = self._rows(
                "SELECT c.id, f.path, c.start_line, c.end_line, c.unit_id, n.d FROM (SELECT hash, "
                "embedding <=> %s::vector AS d FROM vectors v WHERE model = %s AND "
                f"{self._vector_in_scope()} ORDER BY embedding <=> %s::vector "
                "LIMIT %s) n JOIN chunks c ON c.hash = n.hash JOIN files f ON f.id = c.file_id "
                f"WHERE {self._in_scope('f')} ORDER BY n.d, c.id LIMIT %s", (literal, model, literal, limit, limit))
        return [ChunkHit(int(i), str(p), int(s), int(e), u, 1.0 - float(d)) for i, p, s, e, u, d in rows]

    def find_symbols(self, query: str, limit: int = 20, kinds: Sequence[str] | None = None,
                     fuzzy: bool = True) -> list[UnitRef]:
        return lookups.find_symbols(self._rows, query, limit, kinds, scope=self._in_scope("f"), fuzzy=fuzzy)

    # ---------------------------------------------------------------- graph and rows
    def callers(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return lookups.edges(self._rows, unit_ids, kinds, inbound=True, sure=self._sureness)

    def callees(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return lookups.edges(self._rows, unit_ids, kinds, inbound=False, sure=self._sureness)

    def _sureness(self, rows: Sequence[Sequence[Any]]) -> list[tuple[str, float]]:
        return confidence.sureness(self.graph(), rows)

    def get_unit(self, unit_id: int) -> UnitRef | None:
        return lookups.get_units(self._rows, [unit_id]).get(unit_id)

    def file_outline(self, path: str) -> list[UnitRef]:
        return lookups.units_where(self._rows, f"f.path = %s AND {self._in_scope('f')} ORDER BY u.start_line, u.id",
                                   (path,))

    def files(self) -> list[str]:
        return self._paths()  # repos.py: `repo:path` in a view across several

    def file_hashes(self) -> dict[str, str]:
        return {str(p): str(h) for p, h in self._rows(f"SELECT path, hash FROM files f WHERE {self._in_scope('f')}")}

    def edge_count(self) -> int:
        row = self._one(f"SELECT count(*) FROM edges e JOIN files f ON f.id = e.src_file WHERE {self._in_scope('f')}")
        return int(row[0]) if row else 0

    def counts(self) -> IndexCounts:
        return lookups.counts(self._rows, self.get_meta("embed_model"), self._in_scope("f"))

    def close(self) -> None:
        self.conn.close()


def _one_line(method: Callable[..., Any]) -> Callable[..., Any]:
    """The method with a server's failure (gone, out of space, a lost connection) as one line."""
    @functools.wraps(method)
    def wrapper(self: PostgresStore | PgGraph, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"PostgreSQL at {self.url}: {first}", "check the server; an interrupted "
                             "`coderag index --store` is finished by running it again") from exc
    return wrapper


for _name in ("write_file", "delete_file", "set_vectors", "chunks_without_vector", "link_calls", "refresh_statistics",
              "get_meta", "set_meta", "skips", "replace_skips", "keyword_search", "vector_search", "find_symbols",
              "callers", "callees", "get_unit", "file_outline", "files", "file_hashes", "counts", "edge_count",
              "repository", "repository_at", "across", "repositories", "link_across", "cross_imports", "open_calls",
              "definitions", "set_call_targets", *READS):
    setattr(PostgresStore, _name, _one_line(getattr(PostgresStore, _name)))


# the graph rows answer a server's failure in one line too (`url` is redacted already)
for _name in ("all_units", "file_paths", "import_edges", "base_edges", "call_edges", "set_targets",
              "set_base_targets", "clear_orphans", "delete_tests_edges", "insert_tests_edges", "unit_places",
              "imported_files", "definitions_named", "bases_of"):
    setattr(PgGraph, _name, _one_line(getattr(PgGraph, _name)))


def open_postgres(url: str, repo: str | None = None) -> PostgresStore:
    """The index in the PostgreSQL database at `url` (created and migrated when needed): its
    repository `repo` (which must be there), else the one a database used without names holds."""
    store = PostgresStore(connect_live(url), url)
    if repo is None:
        return store
    try:
        return store.repository(repo)
    except BaseException:
        store.close()
        raise
