"""The repositories of a PostgreSQL database: `public.repos` lists them (name, where each was
indexed from, the packages it defines), and each has a schema of its own holding its index
(layout.py). A store reads and writes one repository; several are searched together by a
workspace of stores, as several index files are.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from coderag_tui.errors import StoreError
from coderag_tui.store.postgres.layout import REPO_MIGRATIONS, REPO_SCHEMA_VERSION, schema_name

MAX_NAME = 200
# advisory lock keys (each with the repository id): one migrator, one writer at a time
_MIGRATE_KEY = 72_652_119
_WRITE_KEY = 72_652_120


@dataclass(frozen=True)
class StoredRepo:
    """A repository of the database: its name (what results show), where it was indexed from
    (a folder or a URL without credentials) and the packages it defines."""

    id: int
    name: str
    source: str
    packages: tuple[dict[str, Any], ...] = ()
    files: int = 0


def _row(r: Sequence[Any]) -> StoredRepo:
    try:
        packages = tuple(p for p in json.loads(r[3]) if isinstance(p, dict))
    except (ValueError, TypeError):
        packages = ()
    return StoredRepo(int(r[0]), str(r[1]), str(r[2]), packages)


def listing(conn: psycopg.Connection[Any]) -> list[StoredRepo]:
    """The repositories that have a name (and so a schema), by name."""
    rows = conn.execute("SELECT id, name, source, packages FROM public.repos WHERE name <> '' "
                        "ORDER BY name COLLATE \"C\"").fetchall()
    return [_row(r) for r in rows]


def by_name(conn: psycopg.Connection[Any], name: str) -> StoredRepo:
    """The repository named `name`; an unknown name is one line naming those there are."""
    for repo in listing(conn):
        if repo.name == name:
            return repo
    there = ", ".join(r.name for r in listing(conn)) or "none"
    raise StoreError(f"no repository {name!r} in this database (it holds: {there})",
                     "index it first: coderag index PATH --store URL")


def by_source(conn: psycopg.Connection[Any], source: str) -> StoredRepo | None:
    row = conn.execute("SELECT id, name, source, packages FROM public.repos WHERE source = %s AND name <> ''",
                       (source,)).fetchone()
    return None if row is None else _row(row)


def valid_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME or any(ch in name for ch in ",:/\x00") or not name.isprintable():
        raise StoreError(f"{name[:60]!r} cannot name a repository",
                         "a name without commas, colons or slashes, of at most 200 characters")
    return name


def name_for(source: str) -> str:
    """A short name for a repository: its folder's or URL's last part, safe in URLs."""
    base = source.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "repo"


def add(conn: psycopg.Connection[Any], name: str, source: str) -> StoredRepo:
    """The repository indexed from `source`: the one already holding it, else a new one named
    `name` (`name-2`, ... when another source has that name), with its schema created."""
    name = valid_name(name)
    with conn.transaction():
        conn.execute("LOCK TABLE public.repos IN SHARE ROW EXCLUSIVE MODE")  # two indexers, one name
        found = by_source(conn, source)
        if found is not None:
            return found
        taken = {str(n) for (n,) in conn.execute("SELECT name FROM public.repos").fetchall()}
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        row = conn.execute("INSERT INTO public.repos(name, source, indexed_at) VALUES(%s, %s, %s) RETURNING id",
                           (unique, source, time.time())).fetchone()
        assert row is not None
        repo = StoredRepo(int(row[0]), unique, source)
        conn.execute(f"CREATE SCHEMA {schema_name(repo.id)}")
    migrate(conn, repo.id)
    return repo


def migrate(conn: psycopg.Connection[Any], repo_id: int) -> None:
    """Bring a repository's schema to this version (one migrator at a time)."""
    schema = schema_name(repo_id)
    for number in range(version(conn, repo_id) + 1, REPO_SCHEMA_VERSION + 1):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_MIGRATE_KEY, int(repo_id)))
            if version(conn, repo_id) >= number:
                continue
            # a repository registered by the first layout but never written has no schema yet (and
            # a search_path naming a missing schema would create its tables in `public`)
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            conn.execute(f"SET LOCAL search_path TO {schema}, public")
            conn.execute(REPO_MIGRATIONS[number - 1].encode())  # several statements: no parameters
            conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', %s) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(number),))


def version(conn: psycopg.Connection[Any], repo_id: int) -> int:
    schema = schema_name(repo_id)
    if conn.execute("SELECT to_regclass(%s)", (f"{schema}.meta",)).fetchone() == (None,):
        return 0
    row = conn.execute(f"SELECT value FROM {schema}.meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def write_lock(conn: psycopg.Connection[Any], repo_id: int) -> None:
    """Inside a transaction: wait for the repository's other writers (SQLite's BEGIN IMMEDIATE)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_WRITE_KEY, int(repo_id)))


def set_packages(conn: psycopg.Connection[Any], repo_id: int, packages: Sequence[dict[str, Any]]) -> None:
    conn.execute("UPDATE public.repos SET packages = %s, indexed_at = %s WHERE id = %s",
                 (json.dumps(list(packages)), time.time(), repo_id))


def drop(conn: psycopg.Connection[Any], repo_id: int) -> None:
    """Delete a repository and its whole index."""
    with conn.transaction():
        conn.execute(f"DROP SCHEMA IF EXISTS {schema_name(repo_id)} CASCADE")
        conn.execute("DELETE FROM public.repos WHERE id = %s", (repo_id,))
