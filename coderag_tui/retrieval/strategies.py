"""Selection strategies: which of the search's hits a context is built around.

- `relevance` (the default): the search's order.
- `importance`: among the relevant candidates (the top hits, three per primary slot), the most
  important first: the file's role (entry point > core module > types > ... > test) and how many
  places refer to the unit and to its file, all from the profiles.
- `breadth`: one hit per folder first, then one per file, then the rest: many parts of the code.
- `depth`: the best hit, then what it calls, followed down the call chain (then its callers),
  before the next hits: one dependency chain in depth.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Sequence

from coderag_tui.errors import CoderagError
from coderag_tui.indexing.profiles import IMPORTANCE
from coderag_tui.models import SearchHit
from coderag_tui.store import descriptions
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.retrieval_reads import context_reads

STRATEGIES = ("relevance", "importance", "breadth", "depth")
POOL = 3  # candidates per primary slot that importance and breadth choose from


def check_strategy(name: str | None) -> str:
    """The strategy's name, or one clear error line."""
    s = (name or "relevance").strip().lower().replace("_first", "").replace("-first", "")
    if s not in STRATEGIES:
        raise CoderagError(f"unknown context strategy {name!r}", f"use one of: {', '.join(STRATEGIES)}")
    return s


def importance(db: StoreBackend | ContextReads, unit_ids: Sequence[int]) -> dict[int, float]:
    """A unit's importance from its profile: its file's role, then connectivity (log-scaled, so a
    role outweighs a few more callers). Profiles are the SQLite index's: elsewhere all are equal."""
    rows = (descriptions.importance_rows(db, unit_ids)
            if isinstance(db, StoreBackend) and db.has_table("profiles") else {})
    out: dict[int, float] = {}
    for uid in unit_ids:
        fan_in, role, file_fan_in = rows.get(uid, (0, "module", 0))
        out[uid] = IMPORTANCE.get(role, 0) + math.log2(1 + fan_in) + 0.5 * math.log2(1 + file_fan_in)
    return out


def _breadth(hits: Sequence[SearchHit]) -> list[SearchHit]:
    folders: set[str] = set()
    files: set[str] = set()
    first: list[SearchHit] = []
    second: list[SearchHit] = []
    rest: list[SearchHit] = []
    for h in hits:
        folder = posixpath.dirname(h.unit.path)
        if folder not in folders:
            folders.add(folder)
            files.add(h.unit.path)
            first.append(h)
        elif h.unit.path not in files:
            files.add(h.unit.path)
            second.append(h)
        else:
            rest.append(h)
    return first + second + rest


def _depth(reads: ContextReads, hits: Sequence[SearchHit], n: int) -> list[SearchHit]:
    """The top hit and its call chain (callees depth first, then callers), then the other hits."""
    if not hits:
        return []
    top = hits[0]
    chain: list[SearchHit] = [top]
    seen = {top.unit.id}
    by_id = {h.unit.id: h for h in hits}

    def add(unit_id: int, why: str) -> None:
        unit = by_id[unit_id].unit if unit_id in by_id else reads.get_unit(unit_id)
        if unit is None or unit.kind == "file":
            return
        seen.add(unit_id)
        hit = by_id.get(unit_id)
        chain.append(hit if hit is not None else SearchHit(unit, top.score * 0.5, (why,)))

    def down(unit_id: int) -> None:
        for e in reads.callees([unit_id]):
            if len(chain) >= n:
                return
            if e.unit is not None and e.unit.id not in seen and e.unit.kind != "file":
                add(e.unit.id, f"called on the chain from {top.unit.name}")
                down(e.unit.id)

    down(top.unit.id)
    for e in reads.callers([top.unit.id]):
        if len(chain) >= n:
            break
        if e.unit is not None and e.unit.id not in seen:
            add(e.unit.id, f"calls {top.unit.name}")
    return chain + [h for h in hits[1:] if h.unit.id not in seen]


def select(db: StoreBackend | ContextReads, hits: Sequence[SearchHit], strategy: str, n: int) -> list[SearchHit]:
    """The hits reordered (and, for `depth`, completed from the graph) so that the first `n` are
    the ones the strategy builds the context around."""
    strategy = check_strategy(strategy)
    if strategy == "relevance" or not hits:
        return list(hits)
    if strategy == "depth":
        return _depth(context_reads(db), hits, max(n, 1))
    pool, rest = list(hits[: max(n, 1) * POOL]), list(hits[max(n, 1) * POOL:])
    if strategy == "breadth":
        return _breadth(pool) + rest
    score = importance(db, [h.unit.id for h in pool])
    rank = {h.unit.id: i for i, h in enumerate(pool)}
    return sorted(pool, key=lambda h: (-score[h.unit.id], rank[h.unit.id])) + rest
