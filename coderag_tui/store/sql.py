"""The SQL surface both backends give the store's query modules (`read.py`, `descriptions.py`,
`conversations.py`, ...): statements written once, with `?` parameters, over the same tables and
columns on SQLite and on PostgreSQL (a repository's schema: postgres/layout.py).

Where the two dialects differ, a query asks its connection (`ci`, `like`) instead of carrying
SQLite's spelling; what has no common form at all (full-text tables, vector tables, bulk loads)
is a method of each backend (`StoreBackend`). Only modules under `store/` run SQL: the
architecture test keeps every statement there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

Row = tuple[Any, ...]
Params = Sequence[Any]


class Sql(Protocol):
    """One connection to one repository's index, used from one thread."""

    dialect: str  # "sqlite" or "postgresql"

    def execute(self, sql: str, params: Params = ()) -> Iterator[Row]: ...

    def executemany(self, sql: str, rows: Any) -> None: ...

    def rows(self, sql: str, params: Params = ()) -> list[Row]: ...

    def rows_in(self, sql: str, values: Sequence[Any], params: Params = (), batch: int = 500) -> list[Row]:
        """Rows of `sql` (whose `{marks}` becomes one `?` per value) for the values, in batches."""
        ...

    def one(self, sql: str, params: Params = ()) -> Row | None: ...

    def scalar(self, sql: str, params: Params = (), default: Any = None) -> Any: ...

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to a table, in bulk (PostgreSQL: COPY, sent with the transaction's other
        rows of the table when a statement names it, or at its end)."""
        ...

    def update_rows(self, table: str, columns: Sequence[str], key: str, rows: Sequence[Sequence[Any]]) -> None:
        """Set `columns` of the rows whose `key` is the last value of each row, in bulk."""
        ...

    def changed(self, sql: str, params: Params = ()) -> int:
        """Run a write; the number of rows it changed."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction (nested: a savepoint); one writer per repository at a time."""
        ...

    def get_meta(self, key: str, default: str = "") -> str: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def has_table(self, name: str) -> bool:
        """Whether the repository's index has this table (or index)."""
        ...

    def ci(self, expr: str) -> str:
        """`expr` compared without case (ASCII): `{ci('u.name')} = {ci('?')}`."""
        ...

    @property
    def like(self) -> str:
        """The LIKE operator that ignores (ASCII) case, as SQLite's LIKE does."""
        ...

    def prefix(self, expr: str, text: str) -> tuple[str, tuple[Any, ...]]:
        """A condition (and its parameters) that `expr` starts with `text` in any case, read as a
        range of an index on names."""
        ...


def like_escape(text: str) -> str:
    """Text matched literally by LIKE ... ESCAPE '\\' (`_` and `%` are wildcards otherwise)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# Characters of text a LIKE pattern is built from, at most: no stored path or name is longer
# (PATH_MAX), and SQLite refuses a pattern over 50,000 bytes ("pattern too complex").
MAX_PATTERN = 4096


def matchable(*texts: str) -> bool:
    """Whether text from outside (a question, a path given) is short enough to build a LIKE
    pattern from; longer text matches no path or name."""
    return all(len(t) <= MAX_PATTERN for t in texts)


def marks(n: int) -> str:
    """`?,?,...` for n values (`NULL` for none: `x IN (NULL)` matches nothing)."""
    return ",".join("?" * n) or "NULL"
