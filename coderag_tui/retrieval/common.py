"""Shared pieces of the retrievers: chunk matches, the filters applied to them, per-unit aggregation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from coderag_tui.models import SearchFilters
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.filters import units_of_kind


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


def keep_kind(db: StoreBackend, matches: Sequence[ChunkMatch], filters: SearchFilters | None) -> list[ChunkMatch]:
    """The matches whose unit has the filters' kind (a chunk match points at the unit inside
    it first, see refine.py)."""
    if filters is None or not filters.kind or not matches:
        return list(matches)
    ok = units_of_kind(db, sorted({m.unit_id for m in matches}), filters.kind)
    return [m for m in matches if m.unit_id in ok]


def unit_ranking(matches: Iterable[ChunkMatch]) -> tuple[list[int], dict[int, ChunkMatch]]:
    """Units in the order their first (best) chunk appears, and that best chunk."""
    order: list[int] = []
    best: dict[int, ChunkMatch] = {}
    for m in matches:
        if m.unit_id and m.unit_id not in best:
            best[m.unit_id] = m
            order.append(m.unit_id)
    return order, best
