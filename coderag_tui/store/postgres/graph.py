"""The graph rows of the PostgreSQL backend (`backend.GraphRows`): what the one resolver
(`indexing/graph.py`) and call confidence (`store/confidence.py`) read and write, as the SQLite
backend's `graph_edges` gives them. Rows come in id order, so resolution, which keeps the first
of equal candidates, answers as it does on SQLite.

Target updates go through COPY into a temporary table and one UPDATE ... FROM (a build rewrites
most edges' targets: one statement per edge would be a round trip each)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

Row = tuple[Any, ...]


class PgGraph:
    """`GraphRows` over one PostgreSQL connection (writes in the caller's transaction). `scope`:
    a condition on the files `f` of the repositories resolved (`repos.scope_sql`: integers
    only), so a repository's graph resolves within it."""

    def __init__(self, conn: psycopg.Connection[Any], url: str, scope: str = "TRUE") -> None:
        self.conn = conn
        self.url = url  # without its password: failures name it
        self.scope = scope

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()

    # ---------------------------------------------------------------- what resolution reads
    def all_units(self) -> list[Row]:
        return self._rows("SELECT u.id, u.file_id, u.parent_id, u.kind, u.name, u.is_test FROM units u "
                          f"JOIN files f ON f.id = u.file_id WHERE {self.scope} ORDER BY u.id")

    def file_paths(self) -> list[Row]:
        return self._rows(f"SELECT f.id, f.path FROM files f WHERE {self.scope} ORDER BY f.id")

    def import_edges(self) -> list[Row]:
        return self._rows("SELECT e.id, e.src_file, e.name, e.receiver, e.dst FROM edges e JOIN files f "
                          f"ON f.id = e.src_file WHERE e.kind = 'IMPORTS' AND {self.scope} ORDER BY e.id")

    def base_edges(self) -> list[Row]:
        return self._rows("SELECT e.id, e.src, e.src_file, e.name, e.dst, e.kind FROM edges e JOIN files f "
                          f"ON f.id = e.src_file WHERE e.kind IN ('INHERITS', 'IMPLEMENTS') AND {self.scope} "
                          "ORDER BY e.id")

    def call_edges(self) -> list[Row]:
        return self._rows("SELECT e.id, e.src, e.src_file, e.name, e.receiver, e.dst, e.line FROM edges e "
                          f"JOIN files f ON f.id = e.src_file WHERE e.kind = 'CALLS' AND {self.scope} ORDER BY e.id")

    # ---------------------------------------------------------------- what it writes
    def _update(self, rows: Iterable[tuple[int | None, str, int]], *, with_kind: bool) -> None:
        rows = list(rows)
        if not rows:
            return
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS edge_targets(id bigint, dst bigint, kind text) "
                          "ON COMMIT DELETE ROWS")
        self.conn.execute("DELETE FROM edge_targets")  # (a caller's transaction may hold an earlier batch)
        with self.conn.cursor().copy("COPY edge_targets (dst, kind, id) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        self.conn.execute("UPDATE edges e SET dst = t.dst" + (", kind = t.kind" if with_kind else "") +
                          " FROM edge_targets t WHERE e.id = t.id")
        self.conn.execute("DELETE FROM edge_targets")

    def set_targets(self, updates: Iterable[tuple[int | None, int]]) -> None:
        self._update(((dst, "", eid) for dst, eid in updates), with_kind=False)

    def set_base_targets(self, updates: Iterable[tuple[int | None, str, int]]) -> None:
        self._update(updates, with_kind=True)

    def clear_orphans(self) -> None:
        self.conn.execute(f"UPDATE edges e SET orphan = '' FROM files f WHERE f.id = e.src_file AND {self.scope} "
                          "AND e.orphan <> '' AND e.dst IS NOT NULL")

    def delete_tests_edges(self) -> None:
        self.conn.execute(f"DELETE FROM edges e USING files f WHERE f.id = e.src_file AND {self.scope} "
                          "AND e.kind = 'TESTS'")

    def insert_tests_edges(self, rows: Iterable[tuple[int, int, int, str, int]]) -> None:
        with self.conn.cursor().copy("COPY edges (src, src_file, dst, kind, name, line) FROM STDIN") as copy:
            for src, src_file, dst, name, line in rows:
                copy.write_row((src, src_file, dst, "TESTS", name.replace("\x00", "\ufffd"), line))

    # ---------------------------------------------------------------- what confidence reads
    def unit_places(self, ids: Sequence[int]) -> dict[int, tuple[int, int | None, str]]:
        if not ids:
            return {}
        return {int(i): (int(f), p, str(k)) for i, f, p, k in self._rows(
            "SELECT id, file_id, parent_id, kind FROM units WHERE id = ANY(%s)", ([int(i) for i in ids],))}

    def imported_files(self, file_id: int) -> set[int]:
        return {int(r[0]) for r in self._rows(
            "SELECT t.file_id FROM edges e JOIN units t ON t.id = e.dst WHERE e.src_file = %s "
            "AND e.kind = 'IMPORTS'", (file_id,))}

    def definitions_named(self, name: str) -> int:
        return int(self._rows(f"SELECT count(*) FROM units u JOIN files f ON f.id = u.file_id WHERE u.name = %s "
                              f"AND u.kind <> 'file' AND {self.scope}", (name.replace("\x00", "\ufffd"),))[0][0])

    def bases_of(self, type_ids: Iterable[int]) -> set[int]:
        ids = sorted(int(i) for i in type_ids)
        if not ids:
            return set()
        return {int(r[0]) for r in self._rows(
            "SELECT dst FROM edges WHERE src = ANY(%s) AND kind IN ('INHERITS', 'IMPLEMENTS') "
            "AND dst IS NOT NULL", (ids,))}
