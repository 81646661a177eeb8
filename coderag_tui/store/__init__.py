"""One SQLite file per repository: units, chunks, FTS5 keywords, sqlite-vec vectors, graph edges."""

from coderag_tui.store.db import Database, open_database

__all__ = ["Database", "open_database"]
