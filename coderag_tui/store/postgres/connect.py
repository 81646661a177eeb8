"""Connecting to PostgreSQL: one clear line for every failure (never the password), and the
`public` schema's migrations (the list of repositories; schema.py)."""

from __future__ import annotations

from typing import Any

import psycopg

from coderag_tui.errors import IndexError_, StoreError
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
