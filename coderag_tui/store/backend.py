"""The store interface: one index of one repository, as everything above `store/` sees it.

A store is the SQL surface the store's query modules run on (`store/sql.py`: `read.py`,
`descriptions.py`, `conversations.py`, ... are written once for both backends) plus what each
backend does its own way: keyword rows (FTS5 / BM25 postings), vectors (sqlite-vec / pgvector
with HNSW), rows in bulk (executemany / COPY), its size and place. The backends:
`sqlite_backend.SqliteStore` (one index file, the default) and `postgres.store.PostgresStore`
(one repository of a PostgreSQL database). Nothing above `store/` runs SQL or knows which
backend it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from coderag_tui.errors import StoreError
from coderag_tui.models import EdgeRef, SearchFilters, UnitRef
from coderag_tui.store.sql import Row, Sql

if TYPE_CHECKING:
    import numpy as np

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# Keyword columns and their weights: names first, then path / signature / docstring, then code.
# SQLite gives them to FTS5's bm25(); PostgreSQL's postings weigh each word by them.
KEYWORD_WEIGHTS = {"names": 6.0, "path": 3.0, "signature": 3.0, "doc": 2.0, "code": 1.0}


class GraphRows(Protocol):
    """What graph resolution (`indexing/graph.py`) and call confidence (`store/confidence.py`)
    read and write: rows as plain tuples in the column order each names
    (`graph_edges.StoreGraph` on either backend). Writes run in the caller's transaction."""

    def all_units(self) -> Iterable[Row]:
        """Every unit as (id, file_id, parent_id, kind, name, is_test), by id."""
        ...

    def file_paths(self) -> Iterable[Row]:
        """(file id, path) of every file, by id."""
        ...

    def import_edges(self) -> Iterable[Row]:
        """Every IMPORTS edge as (id, src_file, module, names csv, dst)."""
        ...

    def base_edges(self) -> list[Row]:
        """Every INHERITS/IMPLEMENTS edge as (id, src, src_file, base text, dst, kind)."""
        ...

    def call_edges(self) -> Iterable[Row]:
        """Every CALLS edge as (id, src, src_file, name, receiver, dst, line)."""
        ...

    def set_targets(self, updates: Iterable[tuple[int | None, int]]) -> None:
        """Point edges at new targets: (dst, edge id) pairs."""
        ...

    def set_base_targets(self, updates: Iterable[tuple[int | None, str, int]]) -> None:
        """Point base edges at new targets with their kind: (dst, INHERITS or IMPLEMENTS, edge id)."""
        ...

    def clear_orphans(self) -> None:
        """An edge that resolves is no orphan: clear the mark of every resolved edge."""
        ...

    def delete_tests_edges(self) -> None: ...

    def insert_tests_edges(self, rows: Iterable[tuple[int, int, int, str, int]]) -> None:
        """Insert TESTS edges: (src, src_file, dst, name, line)."""
        ...

    def unit_places(self, ids: Sequence[int]) -> dict[int, tuple[int, int | None, str]]:
        """id -> (file id, parent id, kind) of these units."""
        ...

    def imported_files(self, file_id: int) -> set[int]:
        """The files a file's resolved imports point at."""
        ...

    def definitions_named(self, name: str) -> int:
        """How many units (not files) have exactly this name."""
        ...

    def bases_of(self, type_ids: Iterable[int]) -> set[int]:
        """The units these types' resolved INHERITS/IMPLEMENTS edges point at."""
        ...


@runtime_checkable
class ContextReads(Protocol):
    """The reads that compose a question's context around its hits (graph expansion, outlines,
    metadata, code lines) and open an answer (`read.StoreReads` over a store; the composer
    memoizes them: `retrieval/expansion.MemoReads`)."""

    def callers(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]: ...

    def callees(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]: ...

    def get_unit(self, unit_id: int) -> UnitRef | None: ...

    def file_outline(self, path: str) -> list[UnitRef]: ...

    def children(self, unit_id: int) -> list[UnitRef]:
        """The units whose parent is `unit_id`, by line."""
        ...

    def file_imports(self, path: str) -> list[str]:
        """The modules a file imports, in the order of their lines."""
        ...

    def file_constants(self, path: str, limit: int = 20) -> list[str]:
        """The names of a file's first `limit` constants, by line."""
        ...

    def unit_bases(self, unit_id: int) -> list[str]:
        """A class's base classes as written ([] when none)."""
        ...

    def summary_texts(self, units: Sequence[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
        """Unit id -> (its model summary, the model that wrote it), for (id, path, kind, qualname)
        of units ({} when none)."""
        ...

    def file_chunk_texts(self, path: str) -> list[tuple[int, str]]:
        """(start line, text) of a file's chunks, by start line."""
        ...

    def file_hash(self, path: str) -> str | None:
        """The content hash a file had when it was indexed (None: not indexed)."""
        ...


@runtime_checkable
class StoreBackend(Sql, Protocol):
    """One repository's index. A connection is used from one thread; open one store per thread
    (`reader()` gives the calling thread its own)."""

    backend: str  # "sqlite" or "postgresql" (the same as `dialect`)

    @property
    def location(self) -> str:
        """Where the index is, for people: a file's path, or the database (without its
        password) and the repository."""
        ...

    @property
    def schema_version(self) -> int: ...  # migrations run when the store is opened

    def size_bytes(self) -> int: ...

    def verify(self) -> None:
        """Read the whole index once: damage raises the one clear error now (SQLite; a server
        keeps its own pages whole)."""
        ...

    def reader(self) -> StoreBackend:
        """A connection to the same index for the calling thread (this one on its own thread)."""
        ...

    def close(self) -> None: ...

    def set_packages(self, packages: Sequence[dict[str, Any]]) -> None:
        """Record the packages the repository defines (a database's other repositories import them)."""
        ...

    def packages(self) -> list[dict[str, Any]]:
        """The packages recorded by `set_packages` (an index file records none: its folder says)."""
        ...

    # ---------------------------------------------------------------- bulk writes (indexing)
    def insert_chunks(self, file_id: int, rows: Sequence[Sequence[Any]],
                      keyword_rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """A file's chunks with explicit ids and their keyword rows (names, path words,
        signatures, docstrings, code sub-words)."""
        ...

    def delete_keyword_rows(self, file_id: int) -> None: ...

    def clear_keyword_rows(self) -> None: ...

    def tune_keywords(self) -> None: ...

    def secondary_indexes(self, tables: Sequence[str]) -> list[tuple[str, str, str]]:
        """(name, table, CREATE statement) of these tables' indexes (a bulk build drops them and
        creates them again at its end)."""
        ...

    def bulk_mode(self, on: bool) -> None:
        """Enter (`on`) or leave the way of working of a bulk build: from the drop of its indexes
        to their creation again (on this connection; a new one starts outside it)."""
        ...

    def refresh_statistics(self, full: bool = False) -> None:
        """After a build (`full`: a large one): whatever the backend's searches need counted again."""
        ...

    def chunk_state(self) -> tuple[int, int]:
        """(how many chunks, at least roughly; the largest chunk id): what keyword counts are
        cached by (a change of either means new counts)."""
        ...

    # ---------------------------------------------------------------- keyword search
    def keyword_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each word (words the index lacks left out)."""
        ...

    def keyword_rows(self, terms: Sequence[str], limit: int, filters: SearchFilters | None = None,
                     names_only: bool = False) -> list[Row]:
        """(chunk id, unit id, file id, start, end, score) of the chunks best matching any of the
        words, best first (BM25; `names_only`: in the names column alone)."""
        ...

    def name_pair_rows(self, pairs: Sequence[tuple[str, str]], limit: int,
                       filters: SearchFilters | None = None) -> list[Row]:
        """As `keyword_rows`, for chunks whose names hold one of the word pairs in order."""
        ...

    def word_chunks(self, words: Sequence[str], limit: int, offset: int = 0) -> list[tuple[str, int, str]]:
        """(path, first line, text) of the chunks holding every one of the words (lower case, as
        the keyword columns split them), in chunk order: candidates a caller matches exactly."""
        ...

    def clear_description_rows(self) -> None: ...

    def delete_description_rows(self, unit_ids: Sequence[int]) -> None: ...

    def insert_description_rows(self, rows: Sequence[tuple[int, str]]) -> None:
        """(unit id, text) keyword rows of descriptions (profiles and summaries)."""
        ...

    def description_search(self, terms: Sequence[str], limit: int,
                           filters: SearchFilters | None = None) -> list[int]:
        """Unit ids whose description holds any of the words, best first."""
        ...

    # ---------------------------------------------------------------- vectors
    def vec_ready(self, model_id: str | None = None) -> bool: ...

    def ensure_model_table(self, model_id: str, dim: int) -> bool:
        """Make the vectors fit the model; True when old vectors were dropped."""
        ...

    def write_vectors(self, hashes: Sequence[str], vecs: np.ndarray, model_id: str) -> int: ...

    def bulk_vectors(self, expected: int) -> AbstractContextManager[None]:
        """A block writing `expected` vectors: a backend with a vector index may build it after."""
        ...

    def delete_vectors(self, ids: Sequence[int]) -> None: ...

    def has_vectors(self) -> bool: ...

    def vector_model(self) -> str:
        """The model the index's vectors were made by, "" when it holds none (one read: a search
        asks before each query)."""
        ...

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, np.ndarray]: ...

    def vectors_after(self, after: int) -> list[tuple[int, bytes]]:
        """(vector id, float32 bytes) of the vectors with a larger id, by id."""
        ...

    def vector_blobs(self, ids: Sequence[int]) -> dict[int, bytes]: ...

    def knn_rows(self, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """(vector hash, cosine distance) of the k nearest vectors."""
        ...

    def knn_chunk_rows(self, vec: np.ndarray, k: int) -> list[Row]:
        """The k nearest vectors with the chunks of their hash, in one read: (vector hash,
        cosine distance, chunk id, unit id, file id, start line, end line), nearest first, a
        row per chunk (the chunk's columns NULL when no chunk has the hash: a document's key)."""
        ...

    def vector_state(self) -> tuple[str, str, int] | None:
        """(model, removals count, largest vector id) of the vectors, in one read; None when
        the index has no vector table (what an in-memory copy follows, before each search)."""
        ...


def redact(url: str) -> str:
    """A store URL without its password or options (errors and status show it; secrets never)."""
    try:
        parts = urlsplit(url)
        password, host, port = parts.password, parts.hostname or "", parts.port
    except ValueError:
        return url.split("://", 1)[0] + "://…"
    if password is None:
        return url.split("?", 1)[0]
    netloc = f"{parts.username or ''}:***@{host}" + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def is_postgres_url(target: str | Path) -> bool:
    return str(target).startswith(POSTGRES_SCHEMES)


@dataclass(frozen=True)
class StoreTarget:
    """Where one repository's index is: an index file (`path`), or a PostgreSQL database (`url`,
    kept in memory only: `location` is what people see) and its repository named `repo`, else
    the one indexed from `source` (a folder's absolute path, or a git URL without credentials)."""

    path: Path | None = None
    url: str = field(default="", repr=False)
    repo: str | None = None
    source: str | None = None

    @property
    def location(self) -> str:
        if not self.url:
            return str(self.path)
        return redact(self.url) + (f" (repository {self.repo or self.source})" if self.repo or self.source else "")

    def open(self, create: bool = False, readonly: bool = False) -> StoreBackend:
        """The store (`create`: a database's repository is made when it has none yet)."""
        if self.url:
            return open_store(self.url, self.repo, self.source, create)
        assert self.path is not None
        return open_store(self.path, readonly=readonly)

    def exists(self) -> bool:
        """Whether the index was ever made (opening nothing that is not there)."""
        if not self.url:
            return self.path is not None and self.path.exists()
        from coderag_tui.store.postgres.opening import find_repository

        return find_repository(self.url, self.repo, self.source) is not None


def open_store(target: str | Path, repo: str | None = None, source: str | None = None,
               create: bool = False, readonly: bool = False) -> StoreBackend:
    """The store at `target`: an index file, or a PostgreSQL URL (`postgresql://...`) and one of
    its database's repositories: the one named `repo`, else the one indexed from `source`
    (`create`: made when none was)."""
    if not is_postgres_url(target):
        if repo is not None:
            raise StoreError("an index file holds one repository", "leave out the repository's name")
        from coderag_tui.store.db import open_database

        return open_database(Path(target), readonly=readonly)
    try:
        from coderag_tui.store.postgres import open_postgres
    except ImportError as exc:  # psycopg is an optional extra
        raise StoreError("the PostgreSQL backend needs psycopg", "pip install 'coderag-tui[postgres]'") from exc
    return open_postgres(str(target), repo, source, create)
