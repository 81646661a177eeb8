"""Opening a repository of a PostgreSQL database as a store: by name, by the folder (or URL) it
is indexed from (made on its first build), each on a connection of its own, its schema migrated."""

from __future__ import annotations

import psycopg

from coderag_tui.errors import StoreError
from coderag_tui.store.backend import redact
from coderag_tui.store.postgres import repos
from coderag_tui.store.postgres.connect import connect, connect_live
from coderag_tui.store.postgres.layout import REPO_SCHEMA_VERSION
from coderag_tui.store.postgres.store import PostgresStore, failure, session


def open_repository(url: str, repo: repos.StoredRepo) -> PostgresStore:
    """A store on a repository of the database at `url`, on a connection of its own that
    outlives the server's restarts (connect.LiveConnection)."""
    conn = connect_live(url, session(repo.id))
    try:
        if repos.version(conn, repo.id) < REPO_SCHEMA_VERSION:
            repos.migrate(conn, repo.id)
        return PostgresStore(conn, url, repo)
    except psycopg.Error as exc:
        conn.close()
        raise failure(url, exc) from exc
    except BaseException:
        conn.close()
        raise


def open_postgres(url: str, repo: str | None = None, source: str | None = None, create: bool = False) -> PostgresStore:
    """The store of a repository of the PostgreSQL database at `url` (created and migrated when
    needed): the one named `repo`, else the one indexed from `source` (`create`: a new one,
    named after it, when none was)."""
    conn = connect(url)
    try:
        found: repos.StoredRepo | None
        if repo is not None:
            found = repos.by_name(conn, repo)
        elif source is not None:
            found = repos.by_source(conn, source)
            if found is None and create:
                found = repos.add(conn, repos.name_for(source), source)
            if found is None:
                raise StoreError(f"{source} is not indexed in {redact(url)}",
                                 f"run `coderag index {source} --store URL` first")
        else:
            raise StoreError("which repository of the database?", "give its folder, or --repo NAME")
    except psycopg.Error as exc:  # (the registry's statements: a role that may not write, a lost server)
        raise failure(url, exc) from exc
    finally:
        conn.close()
    return open_repository(url, found)


def find_repository(url: str, repo: str | None, source: str | None) -> repos.StoredRepo | None:
    """The repository named `repo` (else indexed from `source`), or None."""
    conn = connect(url)
    try:
        if repo is not None:
            return next((r for r in repos.listing(conn) if r.name == repo), None)
        return repos.by_source(conn, source) if source is not None else None
    except psycopg.Error as exc:
        raise failure(url, exc) from exc
    finally:
        conn.close()


def stored_repositories(url: str) -> list[repos.StoredRepo]:
    conn = connect(url)
    try:
        return repos.listing(conn)
    except psycopg.Error as exc:
        raise failure(url, exc) from exc
    finally:
        conn.close()

