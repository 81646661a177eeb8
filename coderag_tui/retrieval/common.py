"""Shared pieces of the retrievers: chunk matches, filters as SQL, per-unit aggregation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from coderag_tui.models import SearchFilters
from coderag_tui.store.db import Database

CHUNK_COLS = "c.id, c.unit_id, c.file_id, c.start_line, c.end_line"


@dataclass(frozen=True)
class ChunkMatch:
    chunk_id: int
    unit_id: int
    file_id: int
    start_line: int
    end_line: int
    score: float = 0.0  # bigger is better (for display only; fusion uses ranks)


def match_from_row(row: Sequence[Any], score: float = 0.0) -> ChunkMatch:
    return ChunkMatch(int(row[0]), int(row[1] or 0), int(row[2]), int(row[3]), int(row[4]), score)


def has_filters(filters: SearchFilters | None) -> bool:
    """Filters that apply to chunks (language, path). The unit kind applies to units, after a
    chunk match has been pointed at the unit inside it (see refine.py and `keep_kind`)."""
    return filters is not None and bool(filters.language or filters.path_prefix)


def keep_kind(db: Database, matches: Sequence[ChunkMatch], filters: SearchFilters | None) -> list[ChunkMatch]:
    if filters is None or not filters.kind or not matches:
        return list(matches)
    ids = sorted({m.unit_id for m in matches})
    ok: set[int] = set()
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ",".join("?" * len(part))
        ok.update(r[0] for r in db.execute(
            f"SELECT id FROM units WHERE id IN ({marks}) AND kind = ? COLLATE NOCASE", (*part, filters.kind)))
    return [m for m in matches if m.unit_id in ok]


def filter_sql(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """Conditions on chunks `c` (with `f` files joined) for the language and path filters."""
    if not has_filters(filters):
        return "", []
    assert filters is not None
    where: list[str] = []
    params: list[Any] = []
    if filters.language:
        where.append("f.language = ? COLLATE NOCASE")
        params.append(filters.language)
    if filters.path_prefix:
        prefix = filters.path_prefix
        while prefix.startswith("./"):
            prefix = prefix[2:]
        prefix = "" if prefix == "." else prefix
        if prefix:
            where.append("substr(f.path, 1, ?) = ?")
            params.extend([len(prefix), prefix])
    return " AND ".join(where), params


def filtered_chunk_ids(db: Database, ids: Sequence[int], filters: SearchFilters | None) -> set[int]:
    """The chunk ids among `ids` that pass the filters."""
    if not has_filters(filters):
        return set(ids)
    cond, params = filter_sql(filters)
    out: set[int] = set()
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        marks = ",".join("?" * len(part))
        out.update(r[0] for r in db.execute(
            f"SELECT c.id FROM chunks c JOIN files f ON f.id=c.file_id WHERE c.id IN ({marks}) AND {cond}", (*part, *params)))
    return out


def unit_ranking(matches: Iterable[ChunkMatch]) -> tuple[list[int], dict[int, ChunkMatch]]:
    """Units in the order their first (best) chunk appears, and that best chunk."""
    order: list[int] = []
    best: dict[int, ChunkMatch] = {}
    for m in matches:
        if m.unit_id and m.unit_id not in best:
            best[m.unit_id] = m
            order.append(m.unit_id)
    return order, best
