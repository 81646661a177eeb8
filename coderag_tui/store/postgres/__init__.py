"""The PostgreSQL + pgvector backend of the store (needs `psycopg`: the `postgres` extra)."""

from coderag_tui.store.postgres.opening import open_postgres
from coderag_tui.store.postgres.store import PostgresStore

__all__ = ["PostgresStore", "open_postgres"]
