"""Symbol matches: the definitions a query names, exactly or (for a bare symbol query) fuzzily."""

from __future__ import annotations

import re

from coderag_tui.models import SearchFilters, UnitRef
from coderag_tui.retrieval.router import looks_like_symbol
from coderag_tui.store import retrieval_reads
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.sql import like_escape

_TOKEN = re.compile(r"`?[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*(?:\(\))?`?")
MAX_NAMES = 16
FEW = 5


def passes(u: UnitRef, filters: SearchFilters | None) -> bool:
    if filters is None:
        return True
    if filters.language and u.language.lower() != filters.language.lower():
        return False
    if filters.path_prefix:
        prefix = filters.path_prefix[2:] if filters.path_prefix.startswith("./") else filters.path_prefix
        if prefix not in ("", ".") and not u.path.startswith(prefix):
            return False
    return not (filters.kind and u.kind.lower() != filters.kind.lower())


def is_exact(u: UnitRef, target: str) -> bool:
    """The unit is what the symbol names: its name, its qualified name (or a tail of it), its path."""
    t = target.strip().strip("`")
    t = t[:-2] if t.endswith("()") else t
    qual = t.replace("::", ".").replace("#", ".")
    last = qual.split(".")[-1]
    if "/" in t:
        return u.kind == "file" and (u.path == t or u.path.startswith(t.rstrip("/") + "/")
                                     or u.path.rsplit(".", 1)[0] == t)
    if "." in qual:
        return u.qualname == qual or u.qualname.endswith("." + qual)
    return u.name.lower() == last.lower()


_KIND_RANK = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 1, "function": 1,
              "method": 2, "constant": 3, "file": 4}


def _order(u: UnitRef, target_last: str) -> tuple[int, int, int, int, str, int]:
    return (0 if u.name == target_last else 1, 1 if "test" in u.path.lower() else 0,
            _KIND_RANK.get(u.kind, 2), len(u.path), u.path, u.start_line)


def symbol_units(db: StoreBackend, target: str, limit: int,
                 filters: SearchFilters | None = None) -> tuple[list[UnitRef], list[UnitRef]]:
    """Definitions for a symbol query (`QuerySet`, `Foo.bar`, `parse_url()`, `pkg/auth`), best
    first: those it names exactly, and fuzzy matches (name prefix, then substring). Every query
    here uses an index or stops at a LIMIT, so it stays fast on large indexes."""
    t = target.strip().strip("`")
    t = t[:-2] if t.endswith("()") else t
    qual = t.replace("::", ".").replace("#", ".")
    last = qual.split(".")[-1].split("/")[-1]
    if not last:
        return [], []
    found: dict[int, UnitRef] = {}

    def add(units: list[UnitRef]) -> None:
        for u in units:
            if u.id not in found and passes(u, filters):
                found[u.id] = u

    if "/" in t:
        add(retrieval_reads.files_at(db, t.rstrip("/"), 200))
    add(retrieval_reads.units_named(db, last, 400))
    exact = sorted((u for u in found.values() if is_exact(u, t)), key=lambda u: _order(u, last))
    fuzzy: list[UnitRef] = []
    if len(exact) < limit:
        add(retrieval_reads.units_name_prefix(db, last, 200))
        if not exact and len(found) < FEW and len(last) >= 4:  # a substring scan reads every unit: only when needed
            add(retrieval_reads.units_name_like(db, "%" + like_escape(last) + "%", 100))
        if "/" in t and len(found) < FEW:
            add(retrieval_reads.files_path_like(db, "%" + like_escape(t) + "%", 100))
        seen = {u.id for u in exact}
        fuzzy = sorted((u for u in found.values() if u.id not in seen),
                       key=lambda u: (len(u.name), _order(u, last)))
    return exact[:limit], fuzzy[:limit]


def mentioned_names(text: str, limit: int = MAX_NAMES) -> list[str]:
    """Code-like names mentioned in free text, most mentioned first (then first mention)."""
    counts: dict[str, int] = {}
    for m in _TOKEN.finditer(text):
        tok = m.group(0).strip("`")
        quoted = m.group(0).startswith("`")
        if not (quoted or looks_like_symbol(tok)):
            continue
        name = tok[:-2] if tok.endswith("()") else tok
        if len(name) < 3:
            continue
        counts[name] = counts.get(name, 0) + 1
    order = {n: i for i, n in enumerate(counts)}
    return sorted(counts, key=lambda n: (-counts[n], order[n]))[:limit]


def _last(name: str) -> str:
    return name.replace("::", ".").replace("#", ".").split(".")[-1]


def exact_units(db: StoreBackend, name: str, filters: SearchFilters | None = None, limit: int = 8,
                named: list[UnitRef] | None = None) -> list[UnitRef]:
    """Definitions whose name or qualified name is exactly `name` (last segment for dotted names);
    `named`: the units named like its last segment, when already read."""
    qual = name.replace("::", ".").replace("#", ".")
    last = _last(name)
    if named is None:
        named = retrieval_reads.units_named(db, last, 400, files=False)
    # the lookup ignores case (to use the index); the case must still match
    units = [u for u in named if u.name == last]
    if "." in qual:
        tail = [u for u in units if u.qualname == qual or u.qualname.endswith("." + qual)]
        if tail:
            units = tail
        else:  # `module.func`: keep definitions whose file path mentions the module
            head = qual.split(".")[-2].lower()
            pathy = [u for u in units if head in u.path.lower()]
            units = pathy or units
    units = [u for u in units if passes(u, filters)]
    units.sort(key=lambda u: ("test" in u.path.lower(), len(u.path), u.path, u.start_line))
    return units[:limit]


def mentioned_units(db: StoreBackend, text: str, filters: SearchFilters | None = None, limit: int = 60) -> list[UnitRef]:
    """Definitions of the names a free-text query mentions, interleaved by mention rank."""
    mentioned = mentioned_names(text)
    named = retrieval_reads.units_named_each(db, [_last(n) for n in mentioned], 400, files=False)
    per_name = [exact_units(db, n, filters, named=units) for n, units in zip(mentioned, named, strict=True)]
    per_name = [units for units in per_name if units and len(units) <= 6]  # common names say little
    out: list[UnitRef] = []
    seen: set[int] = set()
    depth = 0
    while len(out) < limit and any(depth < len(us) for us in per_name):
        for units in per_name:
            if depth < len(units) and units[depth].id not in seen:
                seen.add(units[depth].id)
                out.append(units[depth])
        depth += 1
    return out[:limit]


def units_named(db: StoreBackend, words: list[str], filters: SearchFilters | None = None,
                per_name: int = 50) -> list[UnitRef]:
    """Definitions (not files) whose name is one of the words, any case; few per name."""
    return [u for units in retrieval_reads.units_named_each(db, words, per_name, files=False)
            for u in units if passes(u, filters)]
