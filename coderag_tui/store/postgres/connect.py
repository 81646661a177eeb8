"""Connecting to PostgreSQL: one clear line for every failure (never the password), migrations,
and connections that survive the server's restarts (`LiveConnection`)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import psycopg

from coderag_tui.errors import IndexError_, StoreError, StoreUnavailable
from coderag_tui.store.backend import redact
from coderag_tui.store.postgres.schema import MIGRATIONS, MOVE_MIGRATION, SCHEMA_VERSION

_MIGRATE_LOCK = 7_265_211_901  # advisory lock key: one migrator at a time per database


def connect(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection (writes open explicit transactions), migrated to this version."""
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except (psycopg.Error, ValueError) as exc:
        first = (str(exc).strip().splitlines() or ["cannot connect"])[0]
        raise StoreError(f"cannot connect to {redact(url)}: {first.replace(url, redact(url))}",
                         "check the URL, and that the server runs and has pgvector") from exc
    try:
        migrate(conn, url)
        # HNSW keeps scanning past rows another model's filter drops (pgvector 0.8)
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false)")
        # an index can be rebuilt from the repository: a crash may lose the last commits (never
        # corrupt them), as SQLite's WAL with synchronous=NORMAL; a commit then waits for no fsync
        conn.execute("SELECT set_config('synchronous_commit', 'off', false)")
    except BaseException:
        conn.close()
        raise
    return conn


def schema_version(conn: psycopg.Connection[Any]) -> int:
    if conn.execute("SELECT to_regclass('public.meta')").fetchone() == (None,):
        return 0
    row = conn.execute("SELECT value FROM public.meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection[Any], url: str) -> None:
    try:
        for number in range(schema_version(conn) + 1, SCHEMA_VERSION + 1):
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
                if schema_version(conn) >= number:
                    continue  # another connection migrated it meanwhile
                if number == 1 and conn.execute("SELECT to_regclass('public.units')").fetchone() != (None,):
                    raise StoreError(f"{redact(url)} holds tables that are not a coderag index",
                                     "give another database")
                if number == MOVE_MIGRATION:
                    from coderag_tui.store.postgres.move import move_to_schemas

                    move_to_schemas(conn)
                else:
                    conn.execute(f"SET LOCAL search_path TO public; {MIGRATIONS[number - 1]}".encode())
                conn.execute("INSERT INTO public.meta(key, value) VALUES('schema_version', %s) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(number),))
    except psycopg.errors.FeatureNotSupported as exc:
        raise StoreError(f"{redact(url)}: {str(exc).strip().splitlines()[0]}",
                         "install the pgvector extension on the server") from exc
    except psycopg.errors.UndefinedFile as exc:  # CREATE EXTENSION without its files
        raise StoreError(f"{redact(url)} has no pgvector extension",
                         "install pgvector on the server (https://github.com/pgvector/pgvector)") from exc
    except psycopg.Error as exc:
        raise StoreError(f"cannot migrate {redact(url)}: {str(exc).strip().splitlines()[0]}") from exc
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise IndexError_(f"the database {redact(url)} was written by a newer coderag (schema {version})",
                          "upgrade coderag")


# ---------------------------------------------------------------------------- staying connected
# A server outlives its database's restarts: each thread's connection is a `LiveConnection`,
# which notices a connection the server dropped, opens a new one (with the set-up `connect`
# does) and runs a statement that found it dropped again once, outside a transaction. While the
# database cannot be reached, every use raises `StoreUnavailable` at once (no wait per request
# for a connection timeout), and `store_health` says so.

RETRY_AFTER_S = 1.0  # while a store is down, a new connection is tried at most this often


@dataclass
class StoreHealth:
    """What this process last saw of one database: up, or down since when and why."""

    shown: str  # the URL without its password
    up: bool = True
    since: float = field(default_factory=time.time)
    why: str = ""
    checked: float = 0.0  # when a connection was last tried (or a statement last went through)


_health: dict[str, StoreHealth] = {}  # by the URL as given (it may hold a password: never shown)
_health_lock = threading.Lock()


def _note(url: str, up: bool, why: str = "") -> StoreHealth:
    now = time.time()
    with _health_lock:
        health = _health.setdefault(url, StoreHealth(redact(url)))
        if health.up != up:
            health.up, health.since = up, now
        health.why, health.checked = why, now
        return health


def _why(exc: BaseException) -> str:
    return " ".join((str(exc).strip().splitlines() or [type(exc).__name__])[0].split())


def _unavailable(url: str, why: str) -> StoreUnavailable:
    return StoreUnavailable(f"PostgreSQL at {redact(url)} cannot be reached: {why}",
                            "it may be restarting: try again in a few seconds")


def store_health(max_age: float = 2.0, timeout_s: int = 2) -> list[StoreHealth]:
    """Every database this process connected to, each checked (a new connection, then
    `SELECT 1`) when its last check is older than `max_age` seconds."""
    with _health_lock:
        due = [url for url, h in _health.items() if time.time() - h.checked > max_age]
    for url in due:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=timeout_s) as conn:
                conn.execute("SELECT 1")
            _note(url, True)
        except psycopg.Error as exc:
            _note(url, False, _why(exc))
    with _health_lock:
        return [dataclasses.replace(h) for h in _health.values()]


class LiveConnection:
    """A psycopg connection that is replaced when the server dropped it (see above). Used as
    the connection itself: `execute`, `transaction`, `cursor`, `close`, `closed`."""

    def __init__(self, url: str, setup: Callable[[psycopg.Connection[Any]], None] | None = None) -> None:
        self.url = url
        self._setup = setup  # what every new connection runs first (the repository's search path)
        self._conn: psycopg.Connection[Any] | None = None
        self._reconnect()

    def _reconnect(self, at_once: bool = False) -> psycopg.Connection[Any]:
        """A new connection; while the database was seen down less than RETRY_AFTER_S ago,
        StoreUnavailable at once instead (unless `at_once`: a connection just found dropped)."""
        old, self._conn = self._conn, None
        if old is not None:
            with contextlib.suppress(Exception):
                old.close()
        with _health_lock:
            health = _health.get(self.url)
            wait = health is not None and not health.up and time.time() - health.checked < RETRY_AFTER_S
        if wait and not at_once:
            assert health is not None
            raise _unavailable(self.url, health.why)
        try:
            conn = connect(self.url)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.OperationalError):  # not there (a bad URL stays a StoreError)
                _note(self.url, False, _why(exc.__cause__))
                if health is None:  # the first connection: what to check, as `connect` says it
                    raise StoreUnavailable(exc.message, exc.hint) from None
                raise _unavailable(self.url, _why(exc.__cause__)) from None
            raise
        _note(self.url, True)
        if self._setup is not None:
            self._setup(conn)
        self._conn = conn
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        conn = self._conn
        return self._reconnect() if conn is None or conn.closed else conn

    def execute(self, query: Any, params: Any = None, **kw: Any) -> psycopg.Cursor[Any]:
        conn = self._live()
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        try:
            return conn.execute(query, params, **kw)
        except psycopg.OperationalError as exc:
            if not conn.closed:  # a statement's own failure (a timeout, a cancel): not a lost connection
                raise
            if not idle:  # the transaction went with the connection: its caller must start again
                raise _unavailable(self.url, _why(exc)) from None
        # the server dropped the connection (restarted): once more on a new one
        return self._reconnect(at_once=True).execute(query, params, **kw)

    @contextlib.contextmanager
    def transaction(self, *args: Any, **kw: Any) -> Iterator[Any]:
        conn = self._live()
        try:
            with conn.transaction(*args, **kw) as tx:
                yield tx
        except psycopg.OperationalError as exc:
            if not conn.closed:
                raise
            raise _unavailable(self.url, _why(exc)) from None  # (the next use connects again)

    def cursor(self, *args: Any, **kw: Any) -> Any:
        return self._live().cursor(*args, **kw)

    @property
    def closed(self) -> bool:
        return self._conn is None or self._conn.closed

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def __getattr__(self, name: str) -> Any:  # info, pgconn, ...: the current connection's
        return getattr(self._live(), name)


def connect_live(url: str, setup: Callable[[psycopg.Connection[Any]], None] | None = None
                 ) -> psycopg.Connection[Any]:
    """`connect`, kept connected across the server's restarts, each new connection given
    `setup` (typed as the connection it stands for: it answers what the store calls on one)."""
    return cast("psycopg.Connection[Any]", LiveConnection(url, setup))
