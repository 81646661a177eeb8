"""The review's lookups around a change: the calls of a changed unit's name, a file's imports
with the paths they resolve to, the receiver of one call, and constants by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.store.backend import StoreBackend


def file_id(db: StoreBackend, path: str) -> int | None:
    row = db.one("SELECT id FROM files WHERE path=?", (path,))
    return int(row[0]) if row else None


def calls_of(db: StoreBackend, name: str, path: str, qualname: str, limit: int = 2000) -> list[tuple[Any, ...]]:
    """(src, src_file, line, receiver, orphan, dst, name) of the CALLS edges of `name` that
    resolve to nothing, or to the unit `qualname` of `path`; by file and line."""
    return db.rows(
        "SELECT e.src, e.src_file, e.line, e.receiver, e.orphan, e.dst, e.name FROM edges e "
        "LEFT JOIN units t ON t.id = e.dst LEFT JOIN files tf ON tf.id = t.file_id "
        "WHERE e.kind='CALLS' AND e.name=? AND (e.dst IS NULL OR t.id IS NULL "
        "OR (tf.path=? AND t.qualname=?)) ORDER BY e.src_file, e.line LIMIT ?",
        (name, path, qualname, limit),
    )


def imports_of(db: StoreBackend, src_file: int) -> list[tuple[Any, ...]]:
    """(module, imported names csv, target unit or None, the target's path or None) of a
    file's imports."""
    return db.rows(
        "SELECT e.name, e.receiver, t.id, tf.path FROM edges e LEFT JOIN units t ON t.id = e.dst "
        "LEFT JOIN files tf ON tf.id = t.file_id WHERE e.src_file=? AND e.kind='IMPORTS'", (src_file,))


def receiver_at(db: StoreBackend, unit_id: int | None, line: int, name: str) -> str:
    """The receiver of a unit's call of `name` at a line ('' when there is none)."""
    row = db.one("SELECT receiver FROM edges WHERE src=? AND line=? AND name=? AND kind='CALLS'",
                 (unit_id, line, name))
    return str(row[0]) if row else ""


def constants_named(db: StoreBackend, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """(name, path, start line) of the constants of these names, by path within each batch."""
    return db.rows_in("SELECT u.name, f.path, u.start_line FROM units u JOIN files f ON f.id=u.file_id "
                      "WHERE u.kind='constant' AND u.name IN ({marks}) ORDER BY f.path, u.start_line", names, batch=200)
