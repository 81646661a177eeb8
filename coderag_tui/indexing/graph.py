"""Resolve edge targets: the passes over the edges table that point calls, bases and imports
at the units and files they name (`callres` says how a name resolves, `lookup` holds what it
reads, `testedges` derives TESTS edges from the answer).

Resolution is deterministic given the index, so an incremental update that re-resolves every
edge whose answer could have changed gives the same graph as a fresh build.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coderag_tui.indexing.callres import INTERFACE_KINDS, MISS, SELF_NAMES
from coderag_tui.indexing.lookup import Lookup
from coderag_tui.indexing.testedges import derive_tests, tests_rows
from coderag_tui.parsing.kinds import is_test_path
from coderag_tui.store import graph_edges
from coderag_tui.store.backend import GraphRows, StoreBackend


@dataclass
class FullPlan:
    """A whole-graph resolve, computed from the index without writing (see `plan_full`)."""

    imports: list[tuple[int | None, int]]  # (dst, edge id)
    bases: list[tuple[int | None, str, int]]  # (dst, kind, edge id)
    calls: list[tuple[int | None, int]]  # (dst, edge id)
    tests: list[tuple[int, int, int, str, int]]  # TESTS rows (src, src_file, dst, name, line)

    @property
    def changes(self) -> int:
        return len(self.imports) + len(self.bases) + len(self.calls)


def _resolve_imports(lk: Lookup, rows: Iterable[tuple[Any, ...]]) -> tuple[
        list[tuple[int | None, int]], dict[int, list[tuple[int | None, tuple[str, ...]]]], set[int]]:
    """Resolve import rows (id, src_file, module, names, dst): the (new dst, id) updates, every
    file's imports as (target file, names), and the files whose imports now resolve differently."""
    updates: list[tuple[int | None, int]] = []
    fresh: dict[int, list[tuple[int | None, tuple[str, ...]]]] = {}
    moved: set[int] = set()
    for eid, fid, module, names_csv, dst in rows:
        imported = tuple(n for n in names_csv.split(",") if n)
        target_file = lk.resolve_module(module, imported, fid)
        fresh.setdefault(fid, []).append((target_file, imported))
        new_dst = lk.file_unit.get(target_file) if target_file is not None else None
        if new_dst != dst:
            updates.append((new_dst, eid))
            moved.add(fid)
    return updates, fresh, moved


def plan_full(rows: GraphRows) -> FullPlan:
    """Resolve every edge, reading only: it can run on its own connection while the writer is
    busy (a fresh build creates its indexes meanwhile). `apply_full` writes the answer."""
    lk = Lookup.load(rows)
    import_updates, fresh_imports, _ = _resolve_imports(lk, rows.import_edges())
    lk.file_imports = fresh_imports
    base_updates, lk.bases = _resolve_bases(lk, rows.base_edges())
    call_updates: list[tuple[int | None, int]] = []
    resolved: list[tuple[int, int, int, int]] = []  # test files' calls: the rows TESTS are derived from
    test_files = {fid for fid, path in lk.file_path.items() if is_test_path(path)}
    resolve_call = lk.resolve_call
    answers = lk._calls  # resolve_call's answers by (file, name, receiver): read them here first
    # every answer is a unit of the called name: a name no unit has resolves to nothing (a
    # builtin or an external API: ~30% of Django's calls)
    defined = {name for _, name in lk.by_file_name}
    for eid, src, fid, name, receiver, dst, line in rows.call_edges():
        if name not in defined:
            if dst is not None:
                call_updates.append((None, eid))
            continue
        if receiver in SELF_NAMES or receiver.startswith(("self.", "this.")) or (
                not receiver and lk.scoped(name)[0]):  # a name defined in a function: per caller
            target = resolve_call(src, name, receiver)
        else:
            known: Any = answers.get((fid, name, receiver), MISS)
            target = resolve_call(src, name, receiver) if known is MISS else known
        if target != dst:
            call_updates.append((target, eid))
        if target is not None and fid in test_files:
            resolved.append((src, fid, target, line))
    return FullPlan(import_updates, base_updates, call_updates, tests_rows(lk, resolved, list(lk.file_path)))


def apply_full(rows: GraphRows, plan: FullPlan, *, fresh: bool = False) -> int:
    """Write a `plan_full` answer (in the caller's transaction). Returns the edges updated.

    `fresh`: the edges were all just written by a build (no TESTS edges or orphaned calls yet),
    so the two scans of every edge that clear those are skipped."""
    rows.set_targets(plan.imports)
    rows.set_base_targets(plan.bases)
    rows.set_targets(plan.calls)
    if not fresh:
        rows.clear_orphans()
        rows.delete_tests_edges()
    rows.insert_tests_edges(plan.tests)
    return plan.changes


def _resolve_bases(lk: Lookup, base_rows: Iterable[tuple[Any, ...]]
                   ) -> tuple[list[tuple[int | None, str, int]], dict[int, list[int]]]:
    """(edge updates, resolved bases by type) for INHERITS/IMPLEMENTS rows."""
    base_updates: list[tuple[int | None, str, int]] = []
    new_bases: dict[int, list[int]] = defaultdict(list)
    for eid, src, _fid, name, dst, kind in base_rows:
        target = lk.resolve_base(src, name)
        if target is not None:
            new_bases[src].append(target)
        new_kind = "IMPLEMENTS" if target is not None and lk.units[target].kind in INTERFACE_KINDS else "INHERITS"
        if target != dst or new_kind != kind:
            base_updates.append((target, new_kind, eid))
    return base_updates, new_bases


def resolve(db: StoreBackend, *, changed_files: set[int] | None, names: set[str], files_changed: bool = True,
            edge_ids: set[int] | None = None, touched: set[int] | None = None) -> int:
    """Re-resolve the edges whose target may have changed. Returns the number of edges updated.

    changed_files None means everything (a fresh build). Otherwise: edges from changed files,
    edges that name one of `names` (defined in changed files before or after), and, when the
    set of files changed (`files_changed`: files added or deleted), every import. `touched`
    (an incremental resolve) gets the files an updated edge leaves, points from or points at:
    their profiles' connectivity may have changed with it.
    """
    if changed_files is None:
        rows = graph_edges.StoreGraph(db)
        return apply_full(rows, plan_full(rows))
    changed = changed_files
    lk = Lookup.lazy(db)

    # 1. imports (they feed call resolution)
    import_rows = (list(graph_edges.import_edges(db)) if files_changed
                   else graph_edges.import_edges_of(db, sorted(changed)))
    import_updates, fresh_imports, files_with_new_imports = _resolve_imports(lk, import_rows)
    graph_edges.set_targets(db, import_updates, clear_orphans=True)  # (an edge that resolves is no orphan)
    for fid in changed:
        fresh_imports.setdefault(fid, [])
    for fid, entries in fresh_imports.items():
        dict.__setitem__(lk.file_imports, fid, entries)

    # 2. bases (they feed self-call resolution through inherited members)
    base_rows = graph_edges.base_edges_touching(db, changed | files_with_new_imports, names, edge_ids or ())
    base_updates, _ = _resolve_bases(lk, base_rows)
    graph_edges.set_base_targets(db, base_updates)
    lk.bases.clear()  # reloaded from the updated rows on use

    # 3. calls
    scope = changed | files_with_new_imports
    call_rows = graph_edges.call_edges_touching(db, scope, edge_ids or (), names)
    seen: set[int] = set()
    call_updates: list[tuple[int | None, int]] = []
    lk.preload_calls(db, call_rows)
    for eid, src, _fid, name, receiver, dst in call_rows:
        if eid in seen:
            continue
        seen.add(eid)
        target = lk.resolve_call(src, name, receiver)
        if target != dst:
            call_updates.append((target, eid))
    graph_edges.set_targets(db, call_updates, clear_orphans=True)
    # only an edge that was just resolved can stop being an orphan (imports and calls: cleared
    # with their new targets)
    graph_edges.clear_orphans(db, [eid for dst, _, eid in base_updates if dst is not None])

    # 4. derived TESTS edges: redone for the changed test files, and where a call of another
    # test file now resolves differently
    derive_tests(db, lk, scope, files_changed,
                  updated_calls=[eid for _, eid in call_updates])
    if touched is not None:
        touched.update(_touched_files(db, import_updates, import_rows, 0, 1, 4))
        touched.update(_touched_files(db, [(d, e) for d, _, e in base_updates], base_rows, 0, 2, 4))
        touched.update(_touched_files(db, call_updates, call_rows, 0, 2, 5))
    return len(import_updates) + len(base_updates) + len(call_updates)


def _touched_files(db: StoreBackend, updates: Iterable[tuple[int | None, int]], rows: Iterable[tuple[Any, ...]],
                   id_at: int, file_at: int, dst_at: int) -> set[int]:
    """The files of updated edges: where each comes from, and the files of its former and new
    targets (`rows` as read before the update: the id, source file and former target at these
    positions)."""
    new = {eid: dst for dst, eid in updates}
    if not new:
        return set()
    files: set[int] = set()
    units = {d for d in new.values() if d is not None}
    for r in rows:
        if r[id_at] in new:
            files.add(int(r[file_at]))
            if r[dst_at] is not None:
                units.add(int(r[dst_at]))
    places = graph_edges.unit_places(db, sorted(units))
    return files | {f for f, _, _ in places.values()}

