"""The edges another repository may complete: imports and calls this index left unresolved
(a package it does not hold), read when several repositories are searched together."""

from __future__ import annotations

from collections.abc import Sequence

from coderag_tui.store.backend import StoreBackend

MAX_ROWS = 20_000  # of unresolved imports read at a time: a workspace reads them per question


def open_imports(db: StoreBackend) -> list[tuple[int, str, str, str, int]]:
    """(the importing file's unit id, its path, module, imported name, line) of every import
    that names no module of this repository: unresolved, or resolved to a file of another
    language (`import flask` taken for a `docs/_themes/flask/` folder's template)."""
    return [(int(src), str(path), str(name), str(receiver or ""), int(line)) for src, path, name, receiver, line
            in db.rows("SELECT e.src, f.path, e.name, e.receiver, e.line FROM edges e "
                       "JOIN files f ON f.id=e.src_file LEFT JOIN units t ON t.id=e.dst "
                       "LEFT JOIN files tf ON tf.id=t.file_id WHERE e.kind='IMPORTS' "
                       "AND (e.dst IS NULL OR tf.language IS NULL OR tf.language <> f.language) "
                       "ORDER BY f.path, e.line, e.id LIMIT ?", (MAX_ROWS,))]


def open_calls(db: StoreBackend, names: Sequence[str] = (), src_ids: Sequence[int] = (),
               limit: int = 2000) -> list[tuple[int, str, str, str, int]]:
    """(the calling unit's id, its file's path, called name, receiver, line) of unresolved calls,
    those of `names` or those made by the units `src_ids`."""
    values: list[object]
    if names:
        marks, values = ",".join("?" * len(names)), list(names)
        where = f"e.name IN ({marks})"
    elif src_ids:
        marks, values = ",".join("?" * len(src_ids)), [int(i) for i in src_ids]
        where = f"e.src IN ({marks})"
    else:
        return []
    return [(int(src), str(path), str(name), str(receiver or ""), int(line)) for src, path, name, receiver, line
            in db.rows(f"SELECT e.src, f.path, e.name, e.receiver, e.line FROM edges e "
                       f"JOIN files f ON f.id=e.src_file WHERE {where} AND e.kind='CALLS' AND e.dst IS NULL "
                       "ORDER BY f.path, e.line, e.id LIMIT ?", (*values, limit))]
