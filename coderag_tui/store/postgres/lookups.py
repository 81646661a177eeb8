"""Read queries of the PostgreSQL backend: units, symbol lookup, graph edges, counts. Ranking
and row shapes are the SQLite backend's (`store/read.py`), so both answer alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from coderag_tui.models import EdgeRef, IndexCounts, UnitRef
from coderag_tui.store.read import MAX_LIKE_QUERY, _like_escape, _rank, unit_from_row

Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

# (the last column: the unit's repository, named on the unit where it has a name)
UNIT_SELECT = (
    "SELECT u.id, f.path, u.kind, u.name, u.qualname, u.signature, u.start_line, u.end_line, "
    "f.language, u.docstring, u.parent_id, r.name FROM units u JOIN files f ON f.id = u.file_id "
    "JOIN repos r ON r.id = f.repo_id"
)
_MAX_FUZZY_QUERY = 64
_LIKE = " ESCAPE '\\'"
_LOWER = 'lower(u.name) COLLATE "C"'  # the expression of migration 5's index


def _unit(row: Sequence[Any]) -> UnitRef:
    unit = unit_from_row(row)
    return dataclasses.replace(unit, repo=str(row[11])) if row[11] else unit


def units_where(rows: Rows, condition: str, params: Sequence[Any], scope: str = "TRUE") -> list[UnitRef]:
    """Units meeting `condition` (which may end in ORDER BY / LIMIT) within `scope` (a condition
    on the files `f`: repos.scope_sql)."""
    cut = min([i for i in (condition.find(" ORDER BY "), condition.find(" LIMIT ")) if i >= 0] or [len(condition)])
    return [_unit(r) for r in rows(f"{UNIT_SELECT} WHERE {scope} AND ({condition[:cut]}){condition[cut:]}", params)]


def get_units(rows: Rows, ids: Iterable[int]) -> dict[int, UnitRef]:
    wanted = [int(i) for i in dict.fromkeys(ids)]
    if not wanted:
        return {}
    return {u.id: u for u in units_where(rows, "u.id = ANY(%s)", (wanted,))}


def find_symbols(rows: Rows, query: str, limit: int = 20, kinds: Sequence[str] | None = None,
                 scope: str = "TRUE", fuzzy: bool = True) -> list[UnitRef]:
    """Definitions matching a name, tiered as in `store.read.find_symbols` (LIKE there is
    ASCII case-insensitive: ILIKE here), within `scope` (a condition on the files `f`). The
    prefix is a range of the `lower(name) COLLATE "C"` B-tree (ILIKE alone reads every unit);
    the `fuzzy` levels read every name."""

    def where(condition: str, params: Sequence[Any]) -> list[UnitRef]:
        return units_where(rows, condition, params, scope)

    q = query.strip().rstrip("()").strip().replace("\x00", "")
    if not q:
        return []
    like = len(q) <= MAX_LIKE_QUERY
    found: dict[int, tuple[tuple[int, int, int, int, str], UnitRef]] = {}

    def add(units: Iterable[UnitRef], tier: int) -> None:
        for u in units:
            if (kinds and u.kind not in kinds) or (u.kind == "file" and tier > 1):
                continue
            key = _rank(u, tier)
            if u.id not in found or found[u.id][0] > key:
                found[u.id] = (key, u)

    last = q.replace("::", ".").replace("#", ".").split(".")[-1]
    add(where("u.name = %s", (q,)), 0)
    if "." in q or "::" in q or "#" in q:
        qual = q.replace("::", ".").replace("#", ".")
        if like:
            add(where("u.qualname = %s OR u.qualname LIKE %s" + _LIKE, (qual, "%." + _like_escape(qual))), 0)
        else:
            add(where("u.qualname = %s", (qual,)), 0)
        add(where("u.name = %s", (last,)), 2)
    if "/" in q and like:
        add(where("u.kind = 'file' AND (f.path = %s OR f.path LIKE %s" + _LIKE + ")",
                  (q, "%" + _like_escape(q) + "%")), 1)
    if len(found) < limit:
        add(where("lower(u.name) = lower(%s)", (last,)), 1)
    word = _like_escape(last)
    if len(found) < limit and like:
        add(where(f"{_LOWER} >= lower(%s) COLLATE \"C\" AND {_LOWER} < (lower(%s) || chr(1114111)) COLLATE \"C\" "
                  "AND u.name ILIKE %s" + _LIKE + " LIMIT 200", (last, last, word + "%")), 3)
    if len(found) < limit and like and fuzzy:
        add(where("u.name ILIKE %s" + _LIKE + " LIMIT 200", ("%" + word + "%",)), 4)
    if len(found) < limit and fuzzy and 3 <= len(last) <= _MAX_FUZZY_QUERY:
        subsequence = "%" + "%".join(_like_escape(ch) for ch in last) + "%"
        names = [r[0] for r in rows(
            f"SELECT DISTINCT u.name, length(u.name) FROM units u JOIN files f ON f.id = u.file_id WHERE {scope} "
            "AND u.kind <> 'file' AND u.name ILIKE %s" + _LIKE +
            " ORDER BY length(u.name), u.name LIMIT %s", (subsequence, limit * 2))]
        if names:
            add(where("u.name = ANY(%s)", (names,)), 5)
    ranked = sorted(found.values(), key=lambda kv: kv[0])
    return [u for _, u in ranked[:limit]]


def edges(rows: Rows, unit_ids: Sequence[int], kinds: Sequence[str], *, inbound: bool,
          sure: Callable[[Sequence[Sequence[Any]]], list[tuple[str, float]]]) -> list[EdgeRef]:
    """Edges into (`inbound`: callers, tests, subclasses, surest first) or out of the units, as
    `store.read.callers` / `callees` give them; `sure` says how sure each is
    (`confidence.sureness`)."""
    if not unit_ids:
        return []
    ids = [int(i) for i in unit_ids]
    found = rows(
        "SELECT e.src, e.dst, e.kind, e.name, e.line, e.receiver, e.src_file FROM edges e "
        f"WHERE e.{'dst' if inbound else 'src'} = ANY(%s) AND e.kind = ANY(%s) "
        f"ORDER BY {'e.src_file, e.line' if inbound else 'e.line, e.id'}", (ids, list(kinds)))
    units = get_units(rows, [r[0] for r in found] + [r[1] for r in found if r[1] is not None])
    how = sure(found)
    if inbound:
        out = [EdgeRef(kind, units[src], name, line, source=units.get(dst), how=h, confidence=c)
               for (src, dst, kind, name, line, _, _), (h, c) in zip(found, how, strict=True) if src in units]
        return sorted(out, key=lambda e: -e.confidence)  # stable: file and line order within a level
    return [EdgeRef(kind, units.get(dst) if dst is not None else None, name, line, source=units.get(src),
                    how=h, confidence=c)
            for (src, dst, kind, name, line, _, _), (h, c) in zip(found, how, strict=True)]


def counts(rows: Rows, embed_model: str, scope: str = "TRUE") -> IndexCounts:
    """What the repositories of `scope` (a condition on the files `f`, or on the skips `f`) hold."""
    def scalar(sql: str, params: Sequence[Any] = ()) -> int:
        return int(rows(sql, params)[0][0])

    skips = {str(r): int(n) for r, n in rows(
        f"SELECT split_part(reason, ':', 1) AS r, count(*) FROM skips f WHERE {scope} GROUP BY r", ())}
    vectors = scalar("SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE "
                     f"{scope} AND EXISTS (SELECT 1 FROM vectors v "
                     "WHERE v.hash = c.hash AND v.model = %s)", (embed_model,)) if embed_model else 0
    return IndexCounts(
        files=scalar(f"SELECT count(*) FROM files f WHERE {scope}"),
        units=scalar(f"SELECT count(*) FROM units u JOIN files f ON f.id = u.file_id WHERE {scope} "
                     "AND u.kind <> 'file'"),
        chunks=scalar(f"SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE {scope}"),
        vectors=vectors,
        skipped=sum(n for reason, n in skips.items() if reason not in ("error", "partial")),
        errors=skips.get("error", 0),
    )
