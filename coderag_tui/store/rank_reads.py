"""Reads the learned ranker makes beside the retrievers' own: what the units a query names call
(and how many callers each callee has), the size of candidate files, the units and chunk texts
of the few files whose units it ranks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.models import UnitRef
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.read import UNIT_SELECT, unit_from_row


def callees_of(db: StoreBackend, unit_ids: Sequence[int], limit: int = 400) -> list[tuple[int, int, str, int]]:
    """(caller, callee, callee's path, callers of the callee) of the resolved CALLS edges out of
    the units; the callers count says how specific a callee is (a helper everything calls is not)."""
    if not unit_ids:
        return []
    marks = ",".join("?" * len(unit_ids))
    rows = db.rows(
        f"SELECT e.src, e.dst, f.path FROM edges e JOIN units u ON u.id = e.dst JOIN files f ON f.id = u.file_id "
        f"WHERE e.src IN ({marks}) AND e.kind = 'CALLS' AND e.dst IS NOT NULL LIMIT ?", (*unit_ids, limit))
    dsts = sorted({int(r[1]) for r in rows})
    fan: dict[int, int] = {}
    if dsts:
        fan = {int(d): int(n) for d, n in db.rows_in(
            "SELECT dst, count(*) FROM edges WHERE dst IN ({marks}) AND kind = 'CALLS' GROUP BY dst", dsts)}
    return [(int(s), int(d), str(p), fan.get(int(d), 1)) for s, d, p in rows]


def file_sizes(db: StoreBackend, paths: Sequence[str]) -> dict[str, tuple[int, int, str, bool]]:
    """path -> (lines, units, language, parsed into units by a grammar) of these files."""
    return {str(p): (int(n), int(u), str(lang), bool(st)) for p, n, u, lang, st in db.rows_in(
        "SELECT f.path, f.lines, (SELECT count(*) FROM units u WHERE u.file_id = f.id), f.language, f.structured "
        "FROM files f WHERE f.path IN ({marks})", list(paths))}


def units_of_files(db: StoreBackend, paths: Sequence[str]) -> list[UnitRef]:
    """Every unit of these files (files' own units included), by file and line."""
    return [unit_from_row(r) for r in db.rows_in(
        UNIT_SELECT + " WHERE f.path IN ({marks}) ORDER BY f.path, u.start_line, u.id", list(paths))]


def chunks_of_files(db: StoreBackend, paths: Sequence[str]) -> list[tuple[Any, ...]]:
    """(path, start line, end line, text) of the chunks of these files, by file and line."""
    return db.rows_in(
        "SELECT f.path, c.start_line, c.end_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path IN ({marks}) ORDER BY f.path, c.start_line", list(paths))


def file_paths(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, str]:
    """file id -> path."""
    return {int(i): str(p) for i, p in db.rows_in("SELECT id, path FROM files WHERE id IN ({marks})", list(file_ids))}


# the edges' index holds (dst, kind, src_file): the counts come from it without a table row per edge
INBOUND = ("SELECT f.path, count(DISTINCT CASE WHEN e.kind IN ('CALLS', 'IMPORTS', 'INHERITS') THEN e.src_file END), "
           "count(DISTINCT CASE WHEN e.kind = 'TESTS' THEN e.src_file END) "
           "FROM files f JOIN units u ON u.file_id = f.id JOIN edges e ON e.dst = u.id "
           "WHERE f.path IN ({marks}) AND e.src_file <> f.id GROUP BY f.path")


def inbound_files(db: StoreBackend, paths: Sequence[str]) -> dict[str, tuple[int, int]]:
    """path -> (how many other files call, import or subclass its units; how many test files test them)."""
    return {str(path): (int(refs), int(tests)) for path, refs, tests in db.rows_in(INBOUND, list(paths))}
