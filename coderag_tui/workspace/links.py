"""Imports and calls that cross repositories, found at query time from both indexes.

Each index resolves its graph within its repository; an import of a package it does not hold
stays unresolved (an IMPORTS edge with no target). When another repository of the workspace
defines that package (packages.py), the import resolves to that repository's module file,
and the calls the importing file makes through it (`from shared_lib.pricing import
apply_discount; apply_discount(...)`, `shared_lib.apply_discount(...)`,
`const { formatPrice } = require('@acme/ui-kit')`, `kit.formatPrice(...)`) resolve to the
definition of that name in that repository: its module first, else the package's only
definition of the name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coderag_tui.models import EdgeRef, UnitRef
from coderag_tui.store import crosslinks, read
from coderag_tui.workspace.packages import Package

if TYPE_CHECKING:
    from coderag_tui.service import CodeRag

HOW = "another repository's package"
CONFIDENCE = 0.9  # the name matched through an import of the package, as a resolved import call


@dataclass(frozen=True)
class CrossImport:
    """An import in one repository of a module another repository defines."""

    repo: str  # the importing repository
    path: str  # the importing file
    unit_id: int  # the importing file's unit
    module: str  # as written: shared_lib.pricing, @acme/ui-kit
    name: str  # the imported name (`from M import name`), or a JS binding (`kit = require(M)`)
    line: int
    target_repo: str
    target_path: str  # the module's file there
    language: str


def candidates(by_repo: Mapping[str, Sequence[Package]], module: str,
               importer: str) -> Iterator[tuple[str, str, Package]]:
    """(repository, path, package) that `module`, imported in the repository `importer`, may be in
    another repository, in order: the first that holds its file is the one."""
    for name, pkgs in by_repo.items():
        if name == importer:
            continue
        for pkg in pkgs:
            for path in pkg.files_for(module) or []:
                if path:
                    yield name, path, pkg


def through(imp: CrossImport, name: str, receiver: str) -> bool:
    """Whether a call of `name` (on `receiver`) in the importing file goes through the import."""
    bare = imp.module.rsplit(".", 1)[-1] if imp.language == "python" else ""
    return bool(
        (not receiver and imp.name == name)  # from M import name; name()
        or (receiver and receiver in (imp.name, imp.module, bare) and imp.name != name)  # M.name()
        or (not receiver and not imp.name and imp.language == "js")  # const { name } = require(M)
    )


def resolve_call(imports: Sequence[CrossImport], name: str, receiver: str,
                 definition: Callable[[CrossImport, str], UnitRef | None]) -> tuple[str, UnitRef] | None:
    """(repository, definition) a call of the importing file reaches through the first of its
    imports it goes through whose package defines the name."""
    for imp in imports:
        if through(imp, name, receiver):
            unit = definition(imp, name)
            if unit is not None:
                return imp.target_repo, unit
    return None


def _tag(unit: UnitRef, repo: str) -> UnitRef:
    return dataclasses.replace(unit, repo=repo)


class Links:
    """The cross-repository links among the chosen repositories of a workspace."""

    def __init__(self, chosen: Sequence[tuple[str, CodeRag]]) -> None:
        self.chosen = list(chosen)
        self.services = dict(chosen)
        self.packages: dict[str, list[Package]] = {name: s.packages() for name, s in chosen}
        self._imports: dict[str, list[CrossImport]] = {}  # by importing repository, read once

    def target(self, module: str, importer: str) -> tuple[str, str, Package] | None:
        """(repository, file, package) a module resolves to in another repository."""
        for name, path, pkg in candidates(self.packages, module, importer):
            if read.has_file(self.services[name].db, path):
                return name, path, pkg
        return None

    def imports(self, repo: str | None = None) -> list[CrossImport]:
        """Every import (of `repo`, or of every chosen repository) that another one resolves."""
        out: list[CrossImport] = []
        for name, service in self.chosen:
            if repo is not None and name != repo or not any(self.packages[o] for o in self.services if o != name):
                continue
            if name not in self._imports:
                found_here = []
                for unit_id, path, module, imported, line in crosslinks.open_imports(service.db):
                    found = self.target(module, name)
                    if found is not None:
                        found_here.append(CrossImport(name, path, unit_id, module, imported, line, found[0],
                                                      found[1], found[2].language))
                self._imports[name] = found_here
            out += self._imports[name]
        return out

    def _definition(self, imp: CrossImport, name: str) -> UnitRef | None:
        """`name` defined in the package `imp` imports: in the imported module first."""
        found = [u for u in self.services[imp.target_repo].symbols(name, 50)
                 if u.name == name and u.kind != "file"]
        in_module = [u for u in found if u.path == imp.target_path]
        best = in_module or found
        return best[0] if best else None

    def resolve_call(self, imports: Sequence[CrossImport], name: str, receiver: str) -> tuple[str, UnitRef] | None:
        """The definition an unresolved call of the importing file reaches through its imports."""
        return resolve_call(imports, name, receiver, self._definition)

    def _by_file(self, repo: str) -> dict[str, list[CrossImport]]:
        out: dict[str, list[CrossImport]] = {}
        for imp in self.imports(repo):
            out.setdefault(imp.path, []).append(imp)
        return out

    def callers(self, definitions: dict[str, list[UnitRef]], limit: int = 200) -> list[EdgeRef]:
        """Calls from other repositories into the given definitions (by repository)."""
        out: list[EdgeRef] = []
        names = sorted({u.name for units in definitions.values() for u in units})
        wanted = {(repo, u.id) for repo, units in definitions.items() for u in units}
        for repo, service in self.chosen:
            by_file = self._by_file(repo) if names else {}
            if not by_file:
                continue
            for src, path, name, receiver, line in crosslinks.open_calls(service.db, names=names):
                found = self.resolve_call(by_file.get(path, []), name, receiver)
                if found is None or (found[0], found[1].id) not in wanted:
                    continue
                caller = service.unit(src)
                if caller is not None:
                    out.append(EdgeRef("CALLS", _tag(caller, repo), name, line, source=_tag(found[1], found[0]),
                                       how=HOW, confidence=CONFIDENCE))
        return out[:limit]

    def callees(self, repo: str, sources: Sequence[UnitRef]) -> dict[tuple[int, int, str], EdgeRef]:
        """The calls of `sources` (units of `repo`) that another repository resolves, by
        (source id, line, name)."""
        by_file = self._by_file(repo)
        if not by_file or not sources:
            return {}
        service = self.services[repo]
        units = {u.id: u for u in sources}
        out: dict[tuple[int, int, str], EdgeRef] = {}
        for src, path, name, receiver, line in crosslinks.open_calls(service.db, src_ids=list(units)):
            found = self.resolve_call(by_file.get(path, []), name, receiver)
            if found is not None:
                out[(src, line, name)] = EdgeRef("CALLS", _tag(found[1], found[0]), name, line,
                                                 source=_tag(units[src], repo), how=HOW, confidence=CONFIDENCE)
        return out

    def importers(self, target_path: str) -> list[UnitRef]:
        """Files of other repositories that import the file `target_path` (`repo:path`, or a
        path of any chosen repository)."""
        repo, _, path = target_path.partition(":") if ":" in target_path else ("", "", target_path)
        out: list[UnitRef] = []
        for imp in self.imports():
            if imp.target_path == path and (not repo or imp.target_repo == repo):
                unit = self.services[imp.repo].unit(imp.unit_id)
                if unit is not None and all(u.id != unit.id or u.repo != imp.repo for u in out):
                    out.append(_tag(unit, imp.repo))
        return out
