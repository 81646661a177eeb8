"""Structural questions answered from the graph: callers, callees, members, importers, imports,
tests and subclasses of a symbol (or a file / module for imports)."""

from __future__ import annotations

from dataclasses import dataclass

from coderag_tui.models import SearchFilters, UnitRef
from coderag_tui.retrieval.symbols import passes, symbol_units
from coderag_tui.store import read, retrieval_reads
from coderag_tui.store.backend import StoreBackend


@dataclass(frozen=True)
class Answer:
    unit: UnitRef
    reason: str  # e.g. "calls parse_url (line 12)"
    line: int = 0


def definitions(db: StoreBackend, name: str) -> list[UnitRef]:
    """The units a name denotes: exact matches when there are any, else the best fuzzy one."""
    exact, fuzzy = symbol_units(db, name, limit=50)
    return exact or fuzzy[:1]


def files_for_module(db: StoreBackend, target: str) -> list[UnitRef]:
    """File units a module name or path denotes (`pkg.util`, `pkg/util.py`, `util`)."""
    t = target.strip().strip("`")
    stems = {t, t.replace(".", "/")} if "/" not in t else {t}
    out: dict[int, UnitRef] = {}
    for stem in stems:
        for u in retrieval_reads.module_files(db, stem):
            out[u.id] = u
    return sorted(out.values(), key=lambda u: (len(u.path), u.path))


def answer(db: StoreBackend, op: str, target: str, filters: SearchFilters | None = None,
           limit: int = 200) -> list[Answer]:
    """The graph's answer to `op target` (see router.Route.op), best first."""
    out: list[Answer] = []
    if op in ("importers", "imports"):
        files = files_for_module(db, target)
        if op == "importers":
            seen: set[int] = set()
            for f in files:
                for u in read.importers(db, f.path):
                    if u.id not in seen:
                        seen.add(u.id)
                        out.append(Answer(u, f"imports {f.path}"))
            # external modules (and unresolved imports) by the name as written
            for src, name, line in retrieval_reads.imports_named(db, target):
                if src not in seen:
                    seen.add(src)
                    found = read.get_unit(db, src)
                    if found is not None:
                        out.append(Answer(found, f"imports {name}", line))
        else:
            ids = [f.id for f in files] or [u.id for u in definitions(db, target) if u.kind == "file"]
            for e in read.callees(db, ids, kinds=("IMPORTS",)):
                if e.unit is not None:
                    out.append(Answer(e.unit, f"imported as {e.name}", e.line))
    else:
        defs = definitions(db, target)
        ids = [u.id for u in defs]
        if op == "callers":
            out = [Answer(e.unit, f"calls {e.name} (line {e.line})", e.line)
                   for e in read.callers(db, ids) if e.unit is not None]
        elif op == "callees":
            out = [Answer(e.unit, f"called by {target} (line {e.line})", e.line)
                   for e in read.callees(db, ids) if e.unit is not None]
        elif op == "members":
            for d in defs or files_for_module(db, target):
                kids = read.children(db, d.id) if d.kind != "file" else [
                    u for u in read.file_outline(db, d.path) if u.kind != "file"]
                out.extend(Answer(u, f"member of {d.qualname}") for u in kids)
        elif op == "tests":
            out = [Answer(e.unit, f"tests {e.name}", e.line)
                   for e in read.callers(db, ids, kinds=("TESTS",)) if e.unit is not None]
            for path in sorted({u.path for u in defs}):  # test files that test the definitions' files
                fu = read.file_unit(db, path)
                if fu is not None:
                    out.extend(Answer(e.unit, f"tests {path}") for e in read.callers(db, [fu.id], kinds=("TESTS",))
                               if e.unit is not None)
        elif op == "subclasses":
            out = [Answer(e.unit, f"{'implements' if e.kind == 'IMPLEMENTS' else 'inherits'} {e.name}", e.line)
                   for e in read.callers(db, ids, kinds=("INHERITS", "IMPLEMENTS")) if e.unit is not None]
    unique: dict[int, Answer] = {}
    for a in out:
        if a.unit.id not in unique and passes(a.unit, filters):
            unique[a.unit.id] = a
    return list(unique.values())[:limit]
