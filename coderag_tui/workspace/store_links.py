"""Imports across the repositories of one PostgreSQL database: the packages each repository
defines (packages.py, recorded when it is indexed) and the links of imports into them, found
as a workspace of index files finds them at query time (links.py), but stored as the import
edges' targets, so `callers`, `callees` and every reader of the graph follow them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coderag_tui.workspace.links import candidates
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

    return int(store.link_across(resolve))
