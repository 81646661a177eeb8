"""Search filters as SQL: the language and path conditions on chunks `c` (with files `f`
joined) that the ranked queries append, and the checks that keep the matches passing them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coderag_tui.models import SearchFilters
from coderag_tui.store.backend import StoreBackend


def _prefix(path_prefix: str) -> str:
    """A path filter as stored paths start: "./src" is "src"; "." and "./" filter nothing."""
    while path_prefix.startswith("./"):
        path_prefix = path_prefix[2:]
    return "" if path_prefix == "." else path_prefix


def has_filters(filters: SearchFilters | None) -> bool:
    """Filters that apply to chunks (language, path). The unit kind applies to units, after a
    chunk match has been pointed at the unit inside it (see `units_of_kind`)."""
    return filters is not None and bool(filters.language or _prefix(filters.path_prefix or ""))


def filter_sql(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """Conditions on chunks `c` (with `f` files joined) for the language and path filters."""
    if not has_filters(filters):
        return "", []
    assert filters is not None
    where: list[str] = []
    params: list[Any] = []
    if filters.language:
        where.append("lower(f.language) = lower(?)")
        params.append(filters.language)
    prefix = _prefix(filters.path_prefix or "")
    if prefix:
        where.append("substr(f.path, 1, ?) = ?")
        params.extend([len(prefix), prefix])
    return " AND ".join(where), params


def has_path_prefix(db: StoreBackend, path_prefix: str) -> bool:
    """Whether any indexed file's path starts with the filter's prefix."""
    prefix = _prefix(path_prefix)
    return not prefix or db.one("SELECT 1 FROM files WHERE substr(path, 1, ?) = ? LIMIT 1",
                                (len(prefix), prefix)) is not None


def folders(db: StoreBackend) -> set[str]:
    """Every folder that holds an indexed file (`src/`, `src/flask/`, ...)."""
    out: set[str] = set()
    for (path,) in db.execute("SELECT path FROM files"):
        parts = path.split("/")[:-1]
        out.update("/".join(parts[: i + 1]) + "/" for i in range(len(parts)))
    return out


def units_of_kind(db: StoreBackend, ids: Sequence[int], kind: str) -> set[int]:
    """The unit ids among `ids` whose kind is `kind` (in any case)."""
    ok: set[int] = set()
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ",".join("?" * len(part))
        ok.update(r[0] for r in db.execute(
            f"SELECT id FROM units WHERE id IN ({marks}) AND lower(kind) = lower(?)", (*part, kind)))
    return ok


def chunks_passing(db: StoreBackend, ids: Sequence[int], filters: SearchFilters | None) -> set[int]:
    """The chunk ids among `ids` that pass the language and path filters."""
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
