"""The PostgreSQL backend: one repository of a database (its schema first on the connection's
`search_path`, postgres/layout.py), giving the store's query modules the same SQL surface as the
SQLite file (store/sql.py: `?` parameters become psycopg's, a server's failure one line) and doing
what has no common SQL in its own way: rows in bulk by COPY, keyword rows as BM25 postings
(keywords.py), the descriptions' keyword rows as a tsvector, vectors in pgvector with HNSW."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from coderag_tui.errors import StoreError
from coderag_tui.models import SearchFilters
from coderag_tui.store import sql as q
from coderag_tui.store.backend import redact
from coderag_tui.store.embeddings import KNN_CHUNKS, VECTOR_MODEL, VECTOR_STATE, note_removal
from coderag_tui.store.filters import filter_sql, has_filters
from coderag_tui.store.postgres import keywords, repos, vectors
from coderag_tui.store.postgres.layout import schema_name
from coderag_tui.store.postgres.vectors import EF_SEARCH, vector_from_binary, vector_literal

_TOKENS = re.compile(r"--[^\n]*|'(?:[^']|'')*'|\?|%")  # a comment, a quoted string, a mark
_HNSW = "CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops)"
_KEYWORD_CHARS = 400_000  # of a chunk's code column (longer tails are not searched)
BULK_VECTORS = 20_000  # vectors to write at once that are worth an HNSW build after them
_CHUNK_COLUMNS = ("id", "file_id", "unit_id", "start_line", "end_line", "node_kinds", "scope", "hash", "header", "text",
                  "kw_names", "kw_meta", "kw_code")
_WORD_OF: dict[str, re.Pattern[str]] = {}  # a table's name as a word of a statement
_FEW_UPDATES = 500


@functools.lru_cache(maxsize=4096)
def to_postgres(sql: str) -> str:
    """SQLite-style `?` parameters as psycopg's `%s` (a literal `%` doubled), outside quotes and
    comments."""
    def sub(m: re.Match[str]) -> str:
        token = m.group()
        return "%s" if token == "?" else "%%" if token == "%" else token.replace("%", "%%")
    return _TOKENS.sub(sub, sql)


def _clean(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL (a repository's file may): it becomes U+FFFD."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def failure(url: str, exc: psycopg.Error) -> StoreError:
    """A server's error as one line, without the URL's password."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return StoreError(f"PostgreSQL at {redact(url)}: {first}",
                      "check the server and the role's rights; an interrupted `coderag index --store` is finished "
                      "by running it again")


def session(repo_id: int) -> Callable[[psycopg.Connection[Any]], None]:
    """What a connection to the repository runs first (again after a reconnect): its schema
    first on the search path, HNSW's search width, the memory of an index build."""
    def setup(conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"SET search_path TO {schema_name(repo_id)}, public")
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        conn.execute("SET maintenance_work_mem = '512MB'")  # a build's index sorts in memory (used only by them)
    return setup


class PostgresStore:
    """The store of one repository of a PostgreSQL database (with pgvector)."""

    backend = dialect = "postgresql"
    like = "ILIKE"

    def __init__(self, conn: psycopg.Connection[Any], url: str, repo: repos.StoredRepo) -> None:
        self.conn = conn
        self.url = url  # as given: opening another connection needs its password
        self.repo = repo
        self.location = f"{redact(url)} (repository {repo.name})"
        self._depth = 0
        self._owner = threading.get_ident()
        self._readers: dict[int, PostgresStore] = {}
        self._readers_lock = threading.Lock()
        # rows appended by `insert_rows`/`insert_chunks`, sent in one COPY per table when a
        # statement names the table, or when their transaction ends (a round trip per file and
        # table cost most of a build's time)
        self._pending: dict[tuple[str, str], list[Sequence[Any]]] = {}
        self._postings: list[tuple[str, float, int]] = []  # keyword_postings' rows, sent likewise

    # ---------------------------------------------------------------- the SQL surface
    def _fail(self, exc: psycopg.Error) -> StoreError:
        return failure(self.url, exc)

    def _run(self, sql: str, params: q.Params = ()) -> psycopg.Cursor[Any]:
        if (self._pending or self._postings) and (any(_WORD_OF[table].search(sql) for table, _ in self._pending)
                                                  or "keyword_postings" in sql):
            self._flush()
        try:
            return self.conn.execute(to_postgres(sql), [_clean(p) for p in params])
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def execute(self, sql: str, params: q.Params = ()) -> Iterator[q.Row]:
        cur = self._run(sql, params)
        return iter(cur.fetchall()) if cur.description is not None else iter(())

    def executemany(self, sql: str, rows: Any) -> None:
        if self._pending or self._postings:
            self._flush()
        try:
            with self.conn.cursor() as cur:
                cur.executemany(to_postgres(sql), [[_clean(v) for v in r] for r in rows])
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def rows(self, sql: str, params: q.Params = ()) -> list[q.Row]:
        return list(self.execute(sql, params))

    def rows_in(self, sql: str, values: Sequence[Any], params: q.Params = (), batch: int = 500) -> list[q.Row]:
        out: list[q.Row] = []
        for i in range(0, len(values), batch):
            part = list(values[i : i + batch])
            out.extend(self.execute(sql.format(marks=q.marks(len(part))), (*part, *params)))
        return out

    def one(self, sql: str, params: q.Params = ()) -> q.Row | None:
        return next(self.execute(sql, params), None)

    def scalar(self, sql: str, params: q.Params = (), default: Any = None) -> Any:
        row = self.one(sql, params)
        return default if row is None or row[0] is None else row[0]

    def changed(self, sql: str, params: q.Params = ()) -> int:
        return max(self._run(sql, params).rowcount, 0)

    @contextmanager
    def transaction(self) -> Iterator[PostgresStore]:
        """A write transaction; the outermost waits for the repository's other writers. Rows
        waiting to be sent belong to the level they were added in: sent when it ends, dropped
        when it fails."""
        self._flush()
        try:
            with self.conn.transaction():
                self._depth += 1
                try:
                    if self._depth == 1:
                        repos.write_lock(self.conn, self.repo.id)
                    yield self
                    self._flush()
                except BaseException:
                    self._pending.clear()
                    self._postings.clear()
                    raise
                finally:
                    self._depth -= 1
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        for (table, columns), rows in pending.items():
            self._copy(table, columns, rows)
        postings, self._postings = self._postings, []
        if postings:
            self._copy("keyword_postings", "term, impact, chunk_id", postings, ("text", "float4", "int8"))

    def get_meta(self, key: str, default: str = "") -> str:
        value = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return default if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                  (key, value))

    def has_table(self, name: str) -> bool:
        return bool(self.scalar("SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                "WHERE n.nspname = current_schema() AND c.relname = ?", (name,)))

    def ci(self, expr: str) -> str:
        return f"lower({expr})"

    def prefix(self, expr: str, text: str) -> tuple[str, tuple[Any, ...]]:
        """A range of the `lower(name) COLLATE "C"` index (ILIKE 'x%' reads every row)."""
        key = f'lower({expr}) COLLATE "C"'
        return f'{key} >= lower(?) COLLATE "C" AND {key} < (lower(?) || chr(1114111)) COLLATE "C"', (text, text)

    # ---------------------------------------------------------------- the store itself
    @property
    def schema_version(self) -> int:
        return int(self.get_meta("schema_version") or 0)

    def size_bytes(self) -> int:
        return int(self.scalar("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                               "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                               "AND c.relkind IN ('r', 'm')", default=0))

    def verify(self) -> None:
        """(The server keeps its own pages whole: nothing to read through.)"""

    def reader(self) -> PostgresStore:
        """A connection to the same repository for the calling thread (this one on its own
        thread; opened once per thread, closed with this one)."""
        ident = threading.get_ident()
        if ident == self._owner:
            return self
        with self._readers_lock:
            store = self._readers.get(ident)
        if store is None:
            from coderag_tui.store.postgres.opening import (
                open_repository,  # (which builds on this module)
            )

            store = open_repository(self.url, self.repo)
            with self._readers_lock:
                self._readers[ident] = store
        return store

    def close(self) -> None:
        self._pending.clear()
        self._postings.clear()
        with self._readers_lock:
            readers, self._readers = list(self._readers.values()), {}
        for store in readers:
            store.close()
        self.conn.close()

    def set_packages(self, packages: Sequence[dict[str, Any]]) -> None:
        repos.set_packages(self.conn, self.repo.id, packages)

    def packages(self) -> list[dict[str, Any]]:
        return list(self.repo.packages)

    # ---------------------------------------------------------------- bulk writes
    def _copy(self, table: str, columns: str, rows: Iterable[Sequence[Any]], binary: Sequence[str] = ()) -> None:
        """COPY rows into a table (`binary`: the columns' types; a float is rounded to real as SQL's cast does)."""
        try:
            with self.conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN"
                                         + (" (FORMAT BINARY)" if binary else "")) as copy:
                if binary:
                    copy.set_types(list(binary))
                    for row in rows:
                        copy.write_row(row)
                    return
                for row in rows:
                    copy.write_row([_clean(v) for v in row])
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to a table (COPY, with the transaction's other rows of the table)."""
        if rows:
            if table not in _WORD_OF:
                _WORD_OF[table] = re.compile(rf"\b{re.escape(table)}\b")
            self._pending.setdefault((table, ", ".join(columns)), []).extend(rows)
            if not self._depth:  # (no transaction to end: now)
                self._flush()

    def update_rows(self, table: str, columns: Sequence[str], key: str, rows: Sequence[Sequence[Any]]) -> None:
        """COPY into a scratch table, then one UPDATE ... FROM (one statement per row would be a
        round trip each: a build rewrites most edges' targets)."""
        rows = list(rows)
        if len(rows) <= _FEW_UPDATES:  # a few: one pipelined statement each beats a scratch table's set-up
            sets = ", ".join(f"{c}=?" for c in columns)
            self.executemany(f"UPDATE {table} SET {sets} WHERE {key}=?", rows)
            return
        names = ", ".join([*columns, key])
        scratch = "_".join(("updating", table, *columns))
        self._run(f"CREATE TEMP TABLE IF NOT EXISTS {scratch} AS SELECT {names} FROM {table} WITH NO DATA")
        self._run(f"TRUNCATE {scratch}")
        self._copy(scratch, names, rows)
        # the scratch table's size, for the plan: without it PostgreSQL guesses ~1,850 rows and
        # joins by hashing the whole table (every edge, to re-point a few hundred of them)
        self._run(f"ANALYZE {scratch}")
        sets = ", ".join(f"{c} = v.{c}" for c in columns)
        self._run(f"UPDATE {table} t SET {sets} FROM {scratch} v WHERE t.{key} = v.{key}")

    def insert_chunks(self, file_id: int, rows: Sequence[Sequence[Any]],
                      keyword_rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """A file's chunks (id, file id, unit id, start, end, node kinds, scope, hash, header, text)
        and their keyword rows (names, path words, signatures, docstrings, code sub-words)."""
        if not rows:
            return
        out = []
        for c, (names, path, sig, doc, extra) in zip(rows, keyword_rows, strict=True):
            words = (keywords.word_list(names), keywords.word_list(path, sig, doc),
                     keywords.word_list(c[9][:_KEYWORD_CHARS], extra))
            out.append((*c, *(" ".join(w) for w in words)))
            self._postings.extend(keywords.postings(c[0], *words))
        self.insert_rows("chunks", _CHUNK_COLUMNS, out)

    def delete_keyword_rows(self, file_id: int) -> None:
        self._run("DELETE FROM keyword_postings WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id = ?)",
                  (file_id,))

    def clear_keyword_rows(self) -> None:
        self._run("TRUNCATE keyword_postings, keyword_df")

    def tune_keywords(self) -> None:
        """(Postings need no tuning.)"""

    def secondary_indexes(self, tables: Sequence[str]) -> list[tuple[str, str, str]]:
        """(name, table, CREATE statement) of the tables' indexes but their primary keys."""
        return [(str(n), str(t), str(s)) for n, t, s in self.rows_in(
            "SELECT i.indexname, i.tablename, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema() "
            "AND i.tablename IN ({marks}) AND i.indexname NOT LIKE '%pkey' ORDER BY i.indexname", list(tables))]

    def bulk_mode(self, on: bool) -> None:
        """No parallel workers (`on`) for the build's reads of whole tables and its index builds:
        one process does the same work with less CPU in all (a build of the postings' word index
        at 227k chunks: 22 s alone against 10 s + about 15 s of two workers), and on the machine
        the index is made on the cores are busy anyway. Searches, and HNSW's build, keep them."""
        for name in ("max_parallel_maintenance_workers", "max_parallel_workers_per_gather"):
            self._run(f"SET {name} = 0" if on else f"RESET {name}")

    def refresh_statistics(self, full: bool = False) -> None:
        """After a build: the keyword counts when the chunks changed by more than 5%; `full` (a
        large build): the planner's statistics too (without them it may scan every chunk for a
        word; autovacuum keeps them after smaller changes)."""
        if full:
            self._run("ANALYZE files, units, chunks, edges, keyword_postings")
        keywords.refresh_counts(self)

    # ---------------------------------------------------------------- keyword search
    def keyword_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each word (the words the index holds)."""
        return keywords.counts(self, terms)

    def keyword_rows(self, terms: Sequence[str], limit: int, filters: SearchFilters | None = None,
                     names_only: bool = False) -> list[q.Row]:
        """(chunk id, unit id, file id, start, end, score) of the chunks best matching any of the
        words, best first (BM25; `names_only`: in the names column alone)."""
        if limit <= 0:
            return []
        fetch = limit * 8 if has_filters(filters) else limit
        found = keywords.search(self.rows, terms, fetch, names_only=names_only)
        if has_filters(filters):
            cond, params = filter_sql(filters)
            passing = {int(r[0]) for r in self.rows_in(
                "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks}) AND " + cond,
                [r[0] for r in found], params)}
            found = [r for r in found if r[0] in passing]
        return found[:limit]

    def name_pair_rows(self, pairs: Sequence[tuple[str, str]], limit: int,
                       filters: SearchFilters | None = None) -> list[q.Row]:
        """Chunks whose names column holds one of the word pairs in order, best first."""
        if not pairs:
            return []
        found = self.keyword_rows(sorted({w for p in pairs for w in p}), limit * 4, filters, names_only=True)
        if not found:
            return []
        phrases = [f" {a} {b} " for a, b in pairs]
        names: dict[Any, Any] = dict(self.rows_in("SELECT id, ' ' || kw_names || ' ' FROM chunks WHERE id IN ({marks})",
                                  [r[0] for r in found]))
        return [r for r in found if any(p in str(names.get(r[0], "")) for p in phrases)][:limit]

    # ---------------------------------------------------------------- descriptions' keyword rows
    def clear_description_rows(self) -> None:
        self._run("TRUNCATE descriptions_kw")

    def delete_description_rows(self, unit_ids: Sequence[int]) -> None:
        if unit_ids:
            self._run("DELETE FROM descriptions_kw WHERE unit_id = ANY(?)", ([int(i) for i in unit_ids],))

    def insert_description_rows(self, rows: Sequence[tuple[int, str]]) -> None:
        self.executemany("INSERT INTO descriptions_kw(unit_id, words) VALUES(?, to_tsvector('simple', ?)) "
                         "ON CONFLICT(unit_id) DO UPDATE SET words = excluded.words",
                         [(uid, keywords.words(text)) for uid, text in rows])

    def word_chunks(self, words: Sequence[str], limit: int, offset: int = 0) -> list[tuple[str, int, str]]:
        terms = sorted({w.lower() for w in words if w.strip()})
        if not terms or limit <= 0:
            return []
        ids = " INTERSECT ".join(["SELECT chunk_id FROM keyword_postings WHERE term = ?"] * len(terms))
        return [(str(p), int(s), str(t)) for p, s, t in self.rows(
            f"SELECT f.path, c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN "
            f"(SELECT chunk_id FROM ({ids}) w ORDER BY chunk_id LIMIT ? OFFSET ?) ORDER BY c.id",
            (*terms, limit, offset))]

    def description_search(self, terms: Sequence[str], limit: int, filters: SearchFilters | None = None) -> list[int]:
        words = keywords.query_words(terms)
        if not words or limit <= 0:
            return []
        cond, params = filter_sql(filters)
        query = " | ".join(words)
        join = " JOIN units u ON u.id = d.unit_id JOIN files f ON f.id = u.file_id" if cond else ""
        return [int(r[0]) for r in self.rows(
            f"SELECT d.unit_id FROM descriptions_kw d{join} WHERE d.words @@ to_tsquery('simple', ?)"
            f"{' AND ' + cond if cond else ''} ORDER BY ts_rank(d.words, to_tsquery('simple', ?)) DESC, d.unit_id "
            "LIMIT ?", (query, *params, query, limit))]

    # ---------------------------------------------------------------- vectors
    def vec_ready(self, model_id: str | None = None) -> bool:
        if not self.get_meta("embed_dim"):
            return False
        return model_id is None or self.get_meta("embed_model") == model_id

    def ensure_model_table(self, model_id: str, dim: int) -> bool:
        """Make the vectors fit the model (its dimension, an HNSW index); True when old vectors
        were dropped."""
        if self.get_meta("embed_model") == model_id and self.get_meta("embed_dim") == str(dim):
            return False
        with self.transaction():
            had = bool(self.scalar("SELECT 1 FROM vectors LIMIT 1"))
            self._run("DROP INDEX IF EXISTS vectors_hnsw")
            self._run("DELETE FROM vectors")
            self._run(f"ALTER TABLE vectors ALTER COLUMN embedding TYPE vector({int(dim)})")
            self._run(_HNSW)
            self.set_meta("embed_model", model_id)
            self.set_meta("embed_dim", str(int(dim)))
            note_removal(self)
        return had

    def write_vectors(self, hashes: Sequence[str], vecs: np.ndarray, model_id: str) -> int:
        """Store vectors for chunk hashes (skipping hashes another writer stored meanwhile)."""
        if not len(hashes):
            return 0
        with self.transaction():
            self._run(f"CREATE TEMP TABLE IF NOT EXISTS new_vectors(hash text, embedding vector({vecs.shape[1]})) "
                      "ON COMMIT DROP")
            self._copy("new_vectors", "hash, embedding",
                       ((h, vector_literal(v)) for h, v in zip(hashes, vecs, strict=True)))
            return self.changed("INSERT INTO vectors(hash, model, embedding) SELECT DISTINCT ON (hash) hash, ?, "
                                "embedding FROM new_vectors ON CONFLICT DO NOTHING", (model_id,))

    @contextmanager
    def bulk_vectors(self, expected: int) -> Iterator[None]:
        """Many vectors to come into few: the HNSW index is dropped meanwhile and built once after
        (each insert into the graph costs a search of it; a build over all rows costs less and
        gives the same kind of graph), also after an error: a store never stays without it."""
        have = int(self.scalar("SELECT count(*) FROM vectors", default=0))
        if expected < BULK_VECTORS or expected < have:
            yield
            return
        self._run("DROP INDEX IF EXISTS vectors_hnsw")
        try:
            yield
        finally:
            self._run("SELECT set_config('maintenance_work_mem', '1GB', false)")
            self._run(_HNSW)
            self._run("ANALYZE vectors")

    def delete_vectors(self, ids: Sequence[int]) -> None:
        if ids:
            self._run("DELETE FROM vectors WHERE id = ANY(?)", ([int(i) for i in ids],))

    def has_vectors(self) -> bool:
        return bool(self.scalar("SELECT 1 FROM vectors LIMIT 1"))

    def vector_state(self) -> tuple[str, str, int] | None:
        row = self.one(VECTOR_STATE)  # (no dimension: no model's vectors yet)
        return (str(row[1] or ""), str(row[2] or ""), int(row[3] or 0)) if row and row[0] else None

    def vector_model(self) -> str:
        return str(self.scalar(VECTOR_MODEL, default=""))

    def _binary_rows(self, sql: str, params: q.Params) -> list[q.Row]:
        try:
            with self.conn.cursor(binary=True) as cur:
                cur.execute(to_postgres(sql), list(params))
                return cur.fetchall()
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        return {str(h): np.frombuffer(vector_from_binary(bytes(b)), dtype=np.float32) for h, b in self._binary_rows(
            "SELECT hash, embedding FROM vectors WHERE hash = ANY(?)", (wanted,))}

    def vectors_after(self, after: int) -> list[tuple[int, bytes]]:
        return [(int(i), vector_from_binary(bytes(b))) for i, b in self._binary_rows(
            "SELECT id, embedding FROM vectors WHERE id > ? ORDER BY id", (int(after),))]

    def vector_blobs(self, ids: Sequence[int]) -> dict[int, bytes]:
        if not ids:
            return {}
        return {int(i): vector_from_binary(bytes(b)) for i, b in self._binary_rows(
            "SELECT id, embedding FROM vectors WHERE id = ANY(?)", ([int(i) for i in ids],))}

    def knn_rows(self, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        return [(str(h), float(d)) for h, d in vectors.nearest(self, vec, k, "SELECT hash, d FROM nn ORDER BY d")]

    def knn_chunk_rows(self, vec: np.ndarray, k: int) -> list[q.Row]:
        return vectors.nearest(self, vec, k, KNN_CHUNKS)  # (the chunks in the same round trip)

    def chunk_state(self) -> tuple[int, int]:
        """(about how many chunks, largest chunk id): the planner's count (an exact count reads
        every chunk), the id from the primary key."""
        row = self.one("SELECT greatest(c.reltuples, 0)::bigint, (SELECT coalesce(max(id), 0) FROM chunks) "
                       "FROM pg_class c WHERE c.oid = to_regclass('chunks')")
        return (int(row[0]), int(row[1])) if row else (0, 0)
