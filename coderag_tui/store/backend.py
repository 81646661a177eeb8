"""The store interface: what the indexer, retrieval and the service need from an index, in one
Protocol that both backends satisfy (SQLite: `store/sqlite_backend.py`, the default;
PostgreSQL with pgvector: `store/postgres/`).

Rows come in as `write.FileRows` (built by the parse workers, backend-neutral) and go out as the
frozen dataclasses of `models.py`, so nothing above the store sees a backend's SQL or types.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from coderag_tui.errors import StoreError
from coderag_tui.models import EdgeRef, IndexCounts, IndexStatus, UnitRef

if TYPE_CHECKING:
    import numpy as np

    from coderag_tui.store.write import FileMeta, FileRows

# Keyword columns and their weights: names first, then path / signature / docstring, then code.
# SQLite gives them to FTS5's bm25(); PostgreSQL maps them to tsvector weights A, B, C.
KEYWORD_WEIGHTS = {"names": 6.0, "path": 3.0, "signature": 3.0, "doc": 2.0, "code": 1.0}

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by a keyword or vector search; `score`: higher is better (BM25 for
    keywords on both backends, 1 - cosine distance for vectors)."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    unit_id: int | None
    score: float


Row = tuple[Any, ...]


class GraphRows(Protocol):
    """What graph resolution (`indexing/graph.py`) and call confidence (`store/confidence.py`)
    read and write, on either backend: rows as plain tuples in the column order each names, so
    one resolver runs over both (SQLite: `graph_edges.SqliteGraph`; PostgreSQL:
    `postgres/graph.py`). Writes run in the caller's transaction."""

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

    # ---------------------------------------------------------------- what confidence reads
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
    metadata, code lines) and open an answer: `retrieval/expansion.py`, `retrieval/source.py`
    and `answering/opening.py` run on either backend through these."""

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
class StoreBackend(ContextReads, Protocol):
    """One index. A connection is used from one thread; open one store per thread."""

    backend: str  # "sqlite" or "postgresql"

    @property
    def schema_version(self) -> int: ...  # migrations run when the store is opened

    def transaction(self) -> AbstractContextManager[object]: ...

    def get_meta(self, key: str, default: str = "") -> str: ...

    def set_meta(self, key: str, value: str) -> None: ...  # (committed at once outside `transaction()`)

    # ---------------------------------------------------------------- writes
    def write_file(self, rows: FileRows, meta: FileMeta) -> int:
        """Replace one file's units, chunks, keyword rows, imports and outgoing edges in one
        transaction (a savepoint inside `transaction()`). Returns the file's id."""
        ...

    def delete_file(self, path: str) -> bool:
        """Delete every row of one file (one transaction); False when it was not indexed."""
        ...

    def set_vectors(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> int:
        """Store a vector per chunk hash for `model` (skipping hashes already stored)."""
        ...

    def chunks_without_vector(self, model: str, limit: int = 256) -> list[tuple[str, str]]:
        """(hash, text to embed) of up to `limit` chunk texts with no vector of `model`."""
        ...

    def link_calls(self) -> int:
        """Resolve unresolved calls by name only: a definition of the called name in the same
        file, else the only one in the index. Returns the edges resolved. (A quick link for rows
        written by hand; an index build runs the full resolver, `indexing/graph.py`, over
        `graph()`.)"""
        ...

    def graph(self) -> GraphRows:
        """The rows graph resolution and call confidence read and write."""
        ...

    def refresh_statistics(self) -> None:
        """After a build: whatever the backend's searches need counted again (PostgreSQL: the
        planner's statistics and the keyword counts; SQLite: nothing)."""
        ...

    def skips(self) -> dict[str, tuple[str, int, int]]:
        """path -> (reason, size, mtime_ns) of every file the last build skipped."""
        ...

    def replace_skips(self, skipped: dict[str, tuple[str, int, int]]) -> None:
        """Record the files a build skipped, and why (replacing the last build's)."""
        ...

    # ---------------------------------------------------------------- searches
    def keyword_search(self, terms: Sequence[str], limit: int = 60) -> list[ChunkHit]:
        """Chunks holding any of the search words, best first (weighted by column)."""
        ...

    def vector_search(self, vector: np.ndarray, model: str, limit: int = 60) -> list[ChunkHit]:
        """Chunks whose vector of `model` is nearest (cosine) to `vector`, best first."""
        ...

    def find_symbols(self, query: str, limit: int = 20, kinds: Sequence[str] | None = None,
                     fuzzy: bool = True) -> list[UnitRef]:
        """Definitions matching a name: exact, qualified, case-insensitive, prefix, then (`fuzzy`)
        part and letters in order. The fuzzy levels read every unit name; without them each
        level is an index range."""
        ...

    # ---------------------------------------------------------------- rows (graph: ContextReads)
    def files(self) -> list[str]: ...

    def file_hashes(self) -> dict[str, str]: ...  # path -> content hash (what an update compares)

    def counts(self) -> IndexCounts: ...

    def edge_count(self) -> int: ...

    def status(self, repo_root: str) -> IndexStatus:
        """What the index holds, as `coderag status` and `GET /index/status` show it."""
        ...

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        """Units of a file that contain a line, innermost first."""
        ...

    def importers(self, path: str) -> list[UnitRef]:
        """File units that import the file at `path`."""
        ...

    def file_facts(self, path: str) -> tuple[str, int, bool] | None:
        """(language, lines, has syntax errors) of an indexed file."""
        ...

    def unit_summaries(self, path: str) -> dict[int, str]:
        """Stored model summaries of one file's units, by unit id."""
        ...

    def file_index_states(self) -> dict[str, tuple[str, int, int]]:
        """Every indexed file: path -> (language, chunks, chunks with a vector of the index's
        embedding model)."""
        ...

    def skip_reasons(self) -> dict[str, str]:
        """Files the last index run skipped: path -> why."""
        ...

    def close(self) -> None: ...


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


def open_store(target: str | Path, repo: str | None = None) -> StoreBackend:
    """The store at `target`: a PostgreSQL connection URL (`postgresql://...`) or an index file.
    A database holds several repositories: `repo` names one (store/postgres/repos.py); an index
    file holds one."""
    if repo is not None and not is_postgres_url(target):
        raise StoreError("an index file holds one repository", "leave out the repository's name")
    if is_postgres_url(target):
        try:
            from coderag_tui.store.postgres import open_postgres
        except ImportError as exc:  # psycopg is an optional extra
            raise StoreError("the PostgreSQL backend needs psycopg",
                             "pip install 'coderag-tui[postgres]'") from exc
        return open_postgres(str(target), repo)
    from coderag_tui.store.sqlite_backend import SqliteStore

    return SqliteStore.open(Path(target))
