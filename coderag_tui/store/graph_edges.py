"""The graph's reads and writes for edge resolution (`indexing/graph.py` and its parts): the
units and files a lookup loads, the edges a pass re-resolves, and the updates it writes back.

Rows are plain tuples, in the column order each function names, because resolution runs over
every edge of a repository and builds its own tables from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from coderag_tui.store.backend import StoreBackend

Row = tuple[Any, ...]
_UNIT = "SELECT id, file_id, parent_id, kind, name, is_test FROM units"
_IMPORT = "SELECT id, src_file, name, receiver, dst FROM edges WHERE kind='IMPORTS'"
_BASE = "SELECT id, src, src_file, name, dst, kind FROM edges WHERE kind IN ('INHERITS','IMPLEMENTS')"
_CALL = "SELECT id, src, src_file, name, receiver, dst FROM edges WHERE kind='CALLS'"


# ---------------------------------------------------------------- units and files


def all_units(db: StoreBackend) -> Iterator[Row]:
    """Every unit as (id, file_id, parent_id, kind, name, is_test as 0/1)."""
    return db.execute("SELECT id, file_id, parent_id, kind, name, is_test<>0 FROM units")


def units_named(db: StoreBackend, names: Sequence[str]) -> list[Row]:
    """The units of these names, (id, file_id, parent_id, kind, name, is_test), by id per batch."""
    return db.rows_in(f"{_UNIT} WHERE name IN ({{marks}}) ORDER BY id", names)


def units_by_id(db: StoreBackend, ids: Sequence[int]) -> list[Row]:
    return db.rows_in(f"{_UNIT} WHERE id IN ({{marks}})", ids)


def unit_row(db: StoreBackend, uid: int) -> Row | None:
    return db.one(f"{_UNIT} WHERE id=?", (uid,))


def file_units(db: StoreBackend) -> Iterator[Row]:
    """(file id, its file unit's id) for every file."""
    return db.execute("SELECT file_id, id FROM units WHERE kind='file'")


def file_paths(db: StoreBackend) -> Iterator[Row]:
    """(file id, path) for every file."""
    return db.execute("SELECT id, path FROM files")


# ---------------------------------------------------------------- resolved imports and bases


def imports_of_files(db: StoreBackend, fids: Sequence[int]) -> list[Row]:
    """(file id, imported names csv, target file or None) of these files' imports, in edge order
    per batch."""
    return db.rows_in(
        "SELECT e.src_file, e.receiver, t.file_id FROM edges e LEFT JOIN units t ON t.id = e.dst "
        "WHERE e.src_file IN ({marks}) AND e.kind='IMPORTS' ORDER BY e.id", fids)


def imports_of_file(db: StoreBackend, fid: int) -> list[Row]:
    """(imported names csv, target file or None) of one file's imports, in edge order."""
    return db.rows("SELECT e.receiver, t.file_id FROM edges e LEFT JOIN units t ON t.id = e.dst "
                   "WHERE e.src_file=? AND e.kind='IMPORTS' ORDER BY e.id", (fid,))


def resolved_bases(db: StoreBackend, type_id: int) -> list[int]:
    """The units a type's resolved INHERITS/IMPLEMENTS edges point at, in edge order."""
    return [r[0] for r in db.rows("SELECT dst FROM edges WHERE src=? AND kind IN ('INHERITS','IMPLEMENTS') "
                                  "AND dst IS NOT NULL ORDER BY id", (type_id,))]


# ---------------------------------------------------------------- edges to resolve


def import_edges(db: StoreBackend) -> Iterator[Row]:
    """Every IMPORTS edge as (id, src_file, module, names csv, dst)."""
    return db.execute(_IMPORT)


def import_edges_of(db: StoreBackend, fids: Sequence[int]) -> list[Row]:
    """The IMPORTS edges of these files, by id, as `import_edges` gives them."""
    return db.rows_in(f"{_IMPORT} AND src_file IN ({{marks}}) ORDER BY id", fids) if fids else []


def base_edges(db: StoreBackend) -> list[Row]:
    """Every INHERITS/IMPLEMENTS edge as (id, src, src_file, base text, dst, kind), by id: a
    type's bases in the order they are declared, which is the order `self.m()` searches them
    (the covering index would give them by name)."""
    return db.rows(_BASE + " ORDER BY id")


def base_edges_touching(db: StoreBackend, files: Iterable[int], names: Iterable[str], ids: Iterable[int]) -> list[Row]:
    """The base edges of these files, of these base names, or with these ids (through the
    covering index edges_bases; an INHERITS edge's receiver is its base's name)."""
    query = _BASE + " AND {column} IN ({{marks}})"
    found = {r[0]: r for column, values in (("src_file", sorted(files)), ("receiver", sorted(names)),
                                            ("id", sorted(ids))) for r in db.rows_in(query.format(column=column), values)}
    return [found[i] for i in sorted(found)]


def call_edges(db: StoreBackend) -> Iterator[Row]:
    """Every CALLS edge as (id, src, src_file, name, receiver, dst, line)."""
    return db.execute("SELECT id, src, src_file, name, receiver, dst, line FROM edges WHERE kind='CALLS'")


def call_edges_touching(db: StoreBackend, files: Iterable[int], ids: Iterable[int], names: Iterable[str]) -> list[Row]:
    """The CALLS edges (id, src, src_file, name, receiver, dst) from these files, with these ids
    and of these names, in that order (an edge may come more than once)."""
    query = _CALL + " AND {column} IN ({{marks}})"
    return [*db.rows_in(query.format(column="src_file"), sorted(files)),
            *db.rows_in(query.format(column="id"), sorted(ids)),
            *db.rows_in(query.format(column="name"), sorted(names))]


def resolved_calls(db: StoreBackend, files: Sequence[int] | None = None) -> list[Row]:
    """(src, src_file, dst, line) of the resolved CALLS edges, of every file or of these."""
    query = "SELECT src, src_file, dst, line FROM edges WHERE kind='CALLS' AND dst IS NOT NULL"
    if files is None:
        return db.rows(query)
    return db.rows_in(query + " AND src_file IN ({marks})", files) if files else []


def resolved_calls_at(db: StoreBackend, spots: Iterable[tuple[int, int]]) -> list[Row]:
    """`resolved_calls` made by these units at these lines ((unit, line) pairs)."""
    wanted = list(spots)
    rows: list[Row] = []
    for i in range(0, len(wanted), 200):
        part = wanted[i : i + 200]
        rows += db.rows(
            f"WITH s(n, src, line) AS (VALUES {','.join(['(?,?,?)'] * len(part))}) "
            "SELECT e.src, e.src_file, e.dst, e.line FROM s JOIN edges e ON e.src = s.src AND e.line = s.line "
            "WHERE e.kind='CALLS' AND e.dst IS NOT NULL ORDER BY s.n, e.id",
            [x for n, (src, line) in enumerate(part) for x in (n, src, line)])
    return rows


def call_spots(db: StoreBackend, ids: Sequence[int]) -> list[Row]:
    """(src, src_file, line) of these edges."""
    return db.rows_in("SELECT src, src_file, line FROM edges WHERE id IN ({marks})", ids)


# ---------------------------------------------------------------- writes


def set_targets(db: StoreBackend, updates: Iterable[tuple[int | None, int]], clear_orphans: bool = False) -> None:
    """Point edges at new targets: (dst, edge id) pairs; `clear_orphans`: an edge given a target
    is no orphan (in the same write: each row rewritten once)."""
    if not clear_orphans:
        db.update_rows("edges", ("dst",), "id", list(updates))
        return
    updates = list(updates)
    db.update_rows("edges", ("dst", "orphan"), "id", [(d, "", e) for d, e in updates if d is not None])
    db.update_rows("edges", ("dst",), "id", [(d, e) for d, e in updates if d is None])


def set_base_targets(db: StoreBackend, updates: Iterable[tuple[int | None, str, int]]) -> None:
    """Point base edges at new targets with their kind: (dst, INHERITS or IMPLEMENTS, edge id)."""
    db.update_rows("edges", ("dst", "kind"), "id", list(updates))


def clear_orphans(db: StoreBackend, ids: Iterable[int] | None = None) -> None:
    """An edge that resolves is no orphan: of these edges, or of every resolved edge."""
    if ids is None:
        db.execute("UPDATE edges SET orphan='' WHERE orphan<>'' AND dst IS NOT NULL")
    else:
        db.executemany("UPDATE edges SET orphan='' WHERE id=? AND orphan<>''", [(i,) for i in ids])


def delete_tests_edges(db: StoreBackend, files: Sequence[int] | None = None) -> None:
    """Delete the TESTS edges of every file, or of these source files."""
    if files is None:
        db.execute("DELETE FROM edges WHERE kind='TESTS'")
    elif files:
        db.execute(f"DELETE FROM edges WHERE kind='TESTS' AND src_file IN ({','.join('?' * len(files))})",
                   tuple(files))


def delete_file_tests_edges(db: StoreBackend) -> None:
    """Delete the file -> file TESTS edges (those derived from test file names)."""
    db.execute("DELETE FROM edges WHERE kind='TESTS' AND src IN (SELECT id FROM units WHERE kind='file') "
               "AND dst IN (SELECT id FROM units WHERE kind='file')")


def delete_tests_edges_at(db: StoreBackend, spots: Iterable[tuple[int, int]]) -> None:
    """Delete the TESTS edges these units derive at these lines ((unit, line) pairs); file-level
    TESTS edges stay."""
    db.executemany("DELETE FROM edges WHERE kind='TESTS' AND src=? AND line=? AND NOT EXISTS "
                   "(SELECT 1 FROM units u WHERE u.id = edges.dst AND u.kind = 'file')", spots)


def insert_tests_edges(db: StoreBackend, rows: Iterable[tuple[int, int, int, str, int]]) -> None:
    """Insert TESTS edges: (src, src_file, dst, name, line)."""
    db.insert_rows("edges", ("src", "src_file", "dst", "kind", "name", "line"),
                   [(s, f, d, "TESTS", n, ln) for s, f, d, n, ln in rows])


# ---------------------------------------------------------------- what call confidence reads


def unit_places(db: StoreBackend, ids: Sequence[int]) -> dict[int, tuple[int, int | None, str]]:
    """id -> (file id, parent id, kind) of these units."""
    return {int(r[0]): (int(r[1]), r[2], str(r[3])) for r in db.rows_in(
        "SELECT id, file_id, parent_id, kind FROM units WHERE id IN ({marks})", ids)} if ids else {}


def imported_files(db: StoreBackend, file_id: int) -> set[int]:
    """The files a file's resolved imports point at."""
    return {int(r[0]) for r in db.rows("SELECT t.file_id FROM edges e JOIN units t ON t.id = e.dst "
                                        "WHERE e.src_file=? AND e.kind='IMPORTS'", (file_id,))}


def definitions_named(db: StoreBackend, name: str) -> int:
    """How many units (not files) have exactly this name (NOCASE first: the index on names)."""
    return int(db.scalar(f"SELECT count(*) FROM units WHERE {db.ci('name')} = {db.ci('?')} AND kind<>'file' AND name=?",
                         (name, name)) or 0)


def bases_of(db: StoreBackend, type_ids: Iterable[int]) -> set[int]:
    """The units these types' resolved INHERITS/IMPLEMENTS edges point at."""
    return {int(r[0]) for r in db.rows_in(
        "SELECT dst FROM edges WHERE src IN ({marks}) AND kind IN ('INHERITS','IMPLEMENTS') AND dst IS NOT NULL",
        sorted(type_ids))}


class StoreGraph:
    """`backend.GraphRows` over an SQLite index (the functions above, bound to one connection)."""

    def __init__(self, db: StoreBackend) -> None:
        self.db = db

    def all_units(self) -> Iterator[Row]:
        return all_units(self.db)

    def file_paths(self) -> Iterator[Row]:
        return file_paths(self.db)

    def import_edges(self) -> Iterator[Row]:
        return import_edges(self.db)

    def base_edges(self) -> list[Row]:
        return base_edges(self.db)

    def call_edges(self) -> Iterator[Row]:
        return call_edges(self.db)

    def set_targets(self, updates: Iterable[tuple[int | None, int]]) -> None:
        set_targets(self.db, updates)

    def set_base_targets(self, updates: Iterable[tuple[int | None, str, int]]) -> None:
        set_base_targets(self.db, updates)

    def clear_orphans(self) -> None:
        clear_orphans(self.db)

    def delete_tests_edges(self) -> None:
        delete_tests_edges(self.db)

    def insert_tests_edges(self, rows: Iterable[tuple[int, int, int, str, int]]) -> None:
        insert_tests_edges(self.db, rows)

    def unit_places(self, ids: Sequence[int]) -> dict[int, tuple[int, int | None, str]]:
        return unit_places(self.db, ids)

    def imported_files(self, file_id: int) -> set[int]:
        return imported_files(self.db, file_id)

    def definitions_named(self, name: str) -> int:
        return definitions_named(self.db, name)

    def bases_of(self, type_ids: Iterable[int]) -> set[int]:
        return bases_of(self.db, type_ids)
