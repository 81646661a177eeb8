"""The PostgreSQL + pgvector backend of the store (needs `psycopg`: the `postgres` extra)."""

from coderag_tui.store.postgres.store import PostgresStore, open_postgres

__all__ = ["PostgresStore", "open_postgres"]
