"""Imports across the repositories of one PostgreSQL database: the packages each repository
defines (packages.py, recorded when it is indexed) and the links of imports into them, found
as a workspace of index files finds them at query time (links.py), but stored as the import
edges' targets, so `callers`, `callees` and every reader of the graph follow them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coderag_tui.models import UnitRef
from coderag_tui.workspace.links import CrossImport, candidates, resolve_call, through
from coderag_tui.workspace.packages import Package, packages

_FIELDS = {f.name for f in dataclasses.fields(Package)}


def package_rows(root: Path) -> list[dict[str, Any]]:
    """What the repository at `root` defines for others to import, as stored rows."""
    return [dataclasses.asdict(p) for p in packages(root)]


def _packages(rows: Any) -> list[Package]:
    out = []
    for row in rows:
        try:
            out.append(Package(**{k: v for k, v in row.items() if k in _FIELDS}))
        except TypeError:  # a row without a field: names nothing
            continue
    return out


def link(store: Any) -> int:
    """Point every import of a package another repository of the store's database defines at
    its module file there (and unlink those whose package is gone). Returns the edges changed."""
    stored = store.repositories()
    by_name = {r.name: _packages(r.packages) for r in stored}
    ids = {r.name: r.id for r in stored}
    names = {r.id: r.name for r in stored}

    def resolve(repo_id: int, module: str) -> Iterator[tuple[int, str]]:
        importer = names.get(repo_id, "")
        # a module of the importing repository's own packages is its own, whatever others hold
        if any(p.files_for(module) is not None for p in by_name.get(importer, [])):
            return
        for name, path, _ in candidates(by_name, module, importer):
            yield ids[name], path

    return int(store.link_across(resolve)) + link_calls(store)


def link_calls(store: Any) -> int:
    """Resolve the open calls that go through an import linked into another repository to that
    name's definition there (the imported module's first), as links.py does at query time.
    Returns the calls resolved."""
    by_file: dict[int, list[CrossImport]] = {}
    for fid, repo, path, unit_id, module, imported, line, target_repo, target_path, lang in store.cross_imports():
        by_file.setdefault(fid, []).append(CrossImport(repo, path, unit_id, module, imported, line, target_repo,
                                                       target_path, "python" if lang == "python" else "js"))
    calls = store.open_calls(list(by_file)) if by_file else []
    wanted: dict[str, set[str]] = {}
    for _, fid, name, receiver in calls:
        for imp in by_file[fid]:
            if through(imp, name, receiver):
                wanted.setdefault(imp.target_repo, set()).add(name)
    found: dict[tuple[str, str], list[UnitRef]] = {}
    for repo, names in wanted.items():
        for unit in store.definitions(repo, sorted(names)):
            found.setdefault((repo, unit.name), []).append(unit)

    def definition(imp: CrossImport, name: str) -> UnitRef | None:
        units = found.get((imp.target_repo, name), [])
        best = [u for u in units if u.path == imp.target_path] or units
        return best[0] if best else None

    targets = []
    for edge_id, fid, name, receiver in calls:
        hit = resolve_call(by_file[fid], name, receiver, definition)
        if hit is not None:
            targets.append((edge_id, hit[1].id))
    return int(store.set_call_targets(targets))
