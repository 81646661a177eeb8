"""The SQLite connection: apsw (loads extensions on every platform), sqlite-vec, WAL, migrations.

The standard library's `sqlite3` is often built without loadable extensions (this is so on
the machines we build on and on many macOS Pythons), so we use apsw, which bundles a current
SQLite with FTS5 and can always load sqlite-vec.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from coderag_tui.errors import CorruptIndexError, IndexError_, StoreError
from coderag_tui.parsing.identifiers import base_name
from coderag_tui.paths import private
from coderag_tui.store.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from coderag_tui.store.sqlite_backend import SqliteStore

_CORRUPT = (apsw.CorruptError, apsw.NotADBError)
_REBUILD = "delete it or run `coderag index --rebuild`"
_last_opened: list[Path] = []  # the index this process opened last (see `clear_error`)


def _corrupt(path: Path, detail: str = "") -> CorruptIndexError:
    return CorruptIndexError(f"the index {path} is corrupt{f' ({detail})' if detail else ''}", _REBUILD)


def clear_error(exc: BaseException) -> CorruptIndexError | None:
    """The one clear line for SQLite's word that a file is damaged, raised where no Database
    wrapped it (while reading a cursor's rows): the index is the last one this process opened."""
    if isinstance(exc, _CORRUPT):
        return _corrupt(_last_opened[-1] if _last_opened else Path("file"))
    return None


@functools.cache
def expected_schema() -> dict[str, frozenset[str]]:
    """Every table the migrations create, with its columns (virtual tables: no columns checked)."""
    conn = apsw.Connection(":memory:")
    conn.create_scalar_function("coderag_base_name", base_name, 1, deterministic=True)
    for sql in MIGRATIONS:
        conn.execute(sql)
    return _tables(conn)


def _tables(conn: apsw.Connection) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for name, sql in list(conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")):
        virtual = str(sql or "").upper().startswith("CREATE VIRTUAL")
        out[name] = frozenset() if virtual else frozenset(
            r[1] for r in conn.execute(f'PRAGMA table_info("{name}")'))
    return out


def _check_schema(db: Database) -> None:
    """A table or column the migrations made and the file lacks is damage, found at open
    (rather than as `no such table` in the middle of a command, or not at all by an update)."""
    found = _tables(db.conn)
    for table, columns in expected_schema().items():
        if table not in found:
            raise _corrupt(db.path, f"table {table} is missing")
        missing = sorted(columns - found[table])
        if missing:
            raise _corrupt(db.path, f"column {table}.{missing[0]} is missing")


def load_vec(conn: apsw.Connection) -> None:
    """Load sqlite-vec into a connection, or say clearly why it cannot be loaded."""
    try:
        import sqlite_vec
    except ImportError as exc:  # pragma: no cover - a dependency
        raise StoreError("sqlite-vec is not installed", "pip install sqlite-vec") from exc
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    except apsw.Error as exc:
        raise StoreError(
            f"cannot load the sqlite-vec extension: {exc}",
            "reinstall sqlite-vec for this platform",
        ) from exc


class Database:
    """One apsw connection to one index file. Not shared between threads: open one per thread.
    The store's SQL surface (`store/sql.py`) on SQLite; `sqlite_backend.SqliteStore` is the
    store itself."""

    dialect = "sqlite"
    like = "LIKE"  # (ASCII case-insensitive)

    def __init__(self, path: Path, conn: apsw.Connection) -> None:
        self.path = path
        self.conn = conn
        self._tx_depth = 0
        self._owner = threading.get_ident()
        self._readers: dict[int, SqliteStore] = {}
        self._readers_lock = threading.Lock()

    # ------------------------------------------------------------------ queries
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> apsw.Cursor:
        try:
            return self.conn.execute(sql, params)
        except _CORRUPT as exc:
            raise _corrupt(self.path) from exc

    def executemany(self, sql: str, rows: Any) -> None:
        try:
            self.conn.executemany(sql, rows)
        except _CORRUPT as exc:
            raise _corrupt(self.path) from exc

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.execute(sql, params))

    def rows_in(self, sql: str, values: Sequence[Any], params: Sequence[Any] = (),
                batch: int = 500) -> list[tuple[Any, ...]]:
        """Rows of `sql` (whose `{marks}` becomes one `?` per value) for the values, in batches
        that stay within SQLite's limit on parameters; `params` come after each batch's values."""
        out: list[tuple[Any, ...]] = []
        for i in range(0, len(values), batch):
            part = list(values[i : i + batch])
            out.extend(self.execute(sql.format(marks=",".join("?" * len(part))), (*part, *params)))
        return out

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """(One executemany.)"""
        if rows:
            self.executemany(f"INSERT INTO {table}({', '.join(columns)}) VALUES({','.join('?' * len(columns))})",
                             rows)

    def update_rows(self, table: str, columns: Sequence[str], key: str, rows: Sequence[Sequence[Any]]) -> None:
        """(One executemany.)"""
        if rows:
            sets = ", ".join(f"{c}=?" for c in columns)
            self.executemany(f"UPDATE {table} SET {sets} WHERE {key}=?", rows)

    def changed(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a write; the number of rows it changed."""
        self.execute(sql, params)
        return int(self.conn.changes())

    def ci(self, expr: str) -> str:
        """`expr` compared without (ASCII) case; the NOCASE indexes serve it."""
        return f"{expr} COLLATE NOCASE"

    def prefix(self, expr: str, text: str) -> tuple[str, tuple[Any, ...]]:
        """(SQLite reads `LIKE 'x%'` as a range of a NOCASE index.)"""
        from coderag_tui.store.sql import like_escape

        return f"{expr} LIKE ? ESCAPE '\\'", (like_escape(text) + "%",)

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None:
        for row in self.execute(sql, params):
            return row
        return None

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), default: Any = None) -> Any:
        row = self.one(sql, params)
        return default if row is None else row[0]

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """A write transaction (nested calls become savepoints). Rolls back on any error."""
        if self._tx_depth == 0:
            self.execute("BEGIN IMMEDIATE")
            self._tx_depth += 1
            try:
                yield self
            except BaseException:
                self._tx_depth -= 1
                self.conn.execute("ROLLBACK")
                raise
            self._tx_depth -= 1
            self.execute("COMMIT")
        else:
            with self.conn:
                yield self

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str, default: str = "") -> str:
        value = self.scalar("SELECT value FROM meta WHERE key=?", (key,))
        return default if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def verify(self) -> None:
        """Read every page of the file (PRAGMA quick_check): damage anywhere raises the one clear
        error now, not halfway through a command. Costs a read of the whole file."""
        try:
            found = [str(r[0]) for r in self.execute("PRAGMA quick_check")]
        except _CORRUPT as exc:
            raise _corrupt(self.path) from exc
        if found != ["ok"]:
            raise _corrupt(self.path, " ".join(found[0].split())[:160])

    def has_table(self, name: str) -> bool:
        return bool(self.scalar("SELECT 1 FROM sqlite_master WHERE name=?", (name,)))

    @property
    def schema_version(self) -> int:
        return int(self.scalar("PRAGMA user_version", default=0))

    def close(self) -> None:
        with self._readers_lock:
            readers, self._readers = list(self._readers.values()), {}
        for db in readers:
            db.close()
        with contextlib.suppress(apsw.Error):
            self.conn.close()

    def __del__(self) -> None:  # a thread's connection goes with the thread
        self.close()


def _migrate(db: SqliteStore) -> None:
    version = db.schema_version
    if version > SCHEMA_VERSION:
        raise IndexError_(
            f"the index {db.path} was written by a newer coderag (schema {version})",
            "upgrade coderag or delete the index",
        )
    if 1 <= version < SCHEMA_VERSION and db.get_meta("deferred_indexes"):
        from coderag_tui.store.write import restore_indexes  # (write imports this module)

        with db.transaction():  # a killed fresh build's indexes first: a migration may name them
            restore_indexes(db)
    for number in range(version + 1, SCHEMA_VERSION + 1):
        with db.transaction():  # BEGIN IMMEDIATE: one migrator at a time
            if db.schema_version >= number:
                continue  # another connection migrated it meanwhile
            try:
                db.conn.execute(MIGRATIONS[number - 1])
            except apsw.SQLError as exc:  # its tables do not match its version
                raise _corrupt(db.path, f"schema version {number - 1} does not match its tables") from exc
            db.conn.execute(f"PRAGMA user_version={number}")


_OPEN_LOCK = threading.Lock()


def open_database(path: Path, readonly: bool = False, one_thread: bool = False) -> SqliteStore:
    """Open (creating and migrating when needed) the index file at `path`.

    `one_thread`: the caller promises to use the connection from one thread only (a worker's
    private reader); SQLite then skips its per-call connection mutex (~5% of a graph resolve).

    Threads of one process open one at a time (setting WAL mode and migrating need the file to
    themselves); other processes are waited for through SQLite's busy timeout and retries.
    """
    with _OPEN_LOCK:
        for attempt in range(50):
            try:
                return _open(path, readonly, one_thread)
            except StoreError as exc:
                if "locked" not in exc.message and "busy" not in exc.message.lower():
                    raise
                if attempt == 49:
                    raise
                time.sleep(0.1)
    raise AssertionError("unreachable")  # pragma: no cover


def _open(path: Path, readonly: bool, one_thread: bool = False) -> SqliteStore:
    path = Path(path)
    if readonly and not path.exists():
        raise IndexError_(f"no index at {path}", "run `coderag index` first")
    if not path.parent.is_dir():  # a mistyped --db makes no folders
        raise StoreError(f"the folder of the index {path} does not exist", "create it or give another --db file")
    if path.is_dir():
        raise CorruptIndexError(f"the index {path} is a folder, not a file", _REBUILD)
    if path.exists() and _stays_empty(path):
        raise _corrupt(path, "the file is empty")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    if one_thread:  # no connection mutex: apsw relies on it, so sharing this connection would crash
        flags |= apsw.SQLITE_OPEN_NOMUTEX
    try:
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.Error as exc:
        raise StoreError(f"cannot open the index {path}: {exc}") from exc
    if not readonly:
        # for this user alone, before anything is written: SQLite gives the WAL and shared-memory
        # files it creates the index file's permissions
        for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            private(part)
    conn.set_busy_timeout(10_000)
    load_vec(conn)
    # (migration 6 fills the base names of INHERITS edges with it)
    conn.create_scalar_function("coderag_base_name", base_name, 1, deterministic=True)
    from coderag_tui.store.sqlite_backend import SqliteStore  # (which builds on this module)

    db = SqliteStore(path, conn)
    try:
        # before anything writes to it (setting WAL mode changes the file's header)
        if db.schema_version == 0 and db.scalar("SELECT count(*) FROM sqlite_master"):
            raise CorruptIndexError(f"{path} is not a coderag index (it holds other tables)",
                                    "give another --db file, or run `coderag index --rebuild` to move it aside")
        if not readonly:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA temp_store=MEMORY")
        db.execute("PRAGMA cache_size=-65536")
        db.execute("PRAGMA mmap_size=268435456")
        if not readonly:
            _migrate(db)
        elif db.schema_version != SCHEMA_VERSION:
            raise IndexError_(f"the index {path} needs a migration", "run `coderag index`")
        _check_schema(db)
    except _CORRUPT as exc:
        db.close()
        raise _corrupt(path) from exc
    except apsw.Error as exc:
        db.close()
        raise StoreError(f"cannot use the index {path}: {exc}") from exc
    except BaseException:
        db.close()
        raise
    _last_opened[:] = [path]
    return db


def _stays_empty(path: Path) -> bool:
    """An existing file of no bytes: an index that lost everything (SQLite would take it for a
    new database). One that another process has just created gets its header within moments."""
    for _ in range(4):
        try:
            if path.stat().st_size:
                return False
        except OSError:
            return False
        time.sleep(0.05)
    return True
