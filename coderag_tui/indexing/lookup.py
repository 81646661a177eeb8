"""The in-memory tables name resolution reads: units by id, by name, by (file, name) and by
(parent, name), files by id with their paths and stems, each file's resolved imports and each
type's resolved bases. `Lookup.load` reads the whole index (a fresh build); `Lookup.lazy` reads
what is asked for on first use (an incremental update). The resolution itself is `Resolver`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from coderag_tui.indexing.callres import CALLABLE_KINDS, Resolver
from coderag_tui.indexing.modpaths import path_stems, split_path
from coderag_tui.store import graph_edges
from coderag_tui.store.backend import GraphRows, StoreBackend
from coderag_tui.store.write import FILES_GENERATION


@dataclass
class _FileTables:
    """A repository's file tables (file unit, path and stem by file id) and, once built, its path
    suffix tables for import resolution. Shared read-only between lookups."""

    file_unit: dict[int, int]
    file_path: dict[int, str]
    file_stem: dict[int, str]
    stems: dict[str, list[int]] | None = None
    dir_stems: dict[str, list[int]] | None = None


# The last repositories' file tables, keyed by the database and its `files_generation` (meta: a
# new random value whenever a file is added, removed or renamed), so the watcher's batches that
# only edit files neither read every file nor rebuild the suffix tables again.
_FILES_CACHE: dict[tuple[str, str], _FileTables] = {}
# repositories whose tables are kept, the last used: a process updating several in turn (a
# workspace's watcher, a bench writing one folder into both backends) read every file's row
# again at each turn when only one was kept
_FILES_CACHED = 4


class Unit(NamedTuple):
    """A unit as resolution sees it (a tuple: `Lookup.load` makes one per unit of the index)."""

    id: int
    file_id: int
    parent_id: int | None
    kind: str
    name: str
    is_test: bool


class LazyMap(dict):
    """A dict that loads a missing key through `loader(key)` (which stores it) on first use."""

    def __init__(self, loader: Callable[[Any], None], default: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self._loader = loader
        self._default = default
        self._tried: set[Any] = set()

    def _ensure(self, key: Any) -> None:
        if key not in self._tried and not dict.__contains__(self, key):
            self._tried.add(key)
            self._loader(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._ensure(key)
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        self._ensure(key)
        if not dict.__contains__(self, key):
            if self._default is None:
                raise KeyError(key)
            dict.__setitem__(self, key, self._default())
        return dict.__getitem__(self, key)

    def clear(self) -> None:
        dict.clear(self)
        self._tried.clear()



@dataclass
class Lookup(Resolver):
    """In-memory view of the units and files needed to resolve names."""

    units: dict[int, Unit] = field(default_factory=dict)
    by_name: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    by_file_name: dict[tuple[int, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    children: dict[tuple[int, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    file_unit: dict[int, int] = field(default_factory=dict)
    file_path: dict[int, str] = field(default_factory=dict)
    file_stem: dict[int, str] = field(default_factory=dict)
    _maps: dict[int, tuple[dict[str, list[int]], dict[str, list[int]], list[int]]] = field(default_factory=dict)
    stems: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    dir_stems: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    file_imports: dict[int, list[tuple[int | None, tuple[str, ...]]]] = field(default_factory=dict)
    bases: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    # resolve_call answers for calls without a self receiver: (file, name, receiver) -> target;
    # valid once imports and bases are resolved (resolve() fills it in its call step only)
    _calls: dict[tuple[int, str, str], int | None] = field(default_factory=dict)
    # and for `self.x()` calls, same validity: (enclosing type, name, via super) -> member or None;
    # a test class calls `self.assertEqual` thousands of times, each a walk up its bases
    _members: dict[tuple[int, str, bool], int | None] = field(default_factory=dict)
    _types: dict[int, Any] = field(default_factory=dict)  # unit -> its enclosing type (units do not move)
    _homes: dict[int, int | None] = field(default_factory=dict)  # unit -> the function it is local to
    _scoped: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)  # see Resolver.scoped
    _preload_names: Callable[[Iterable[str]], None] = lambda names: None
    _preload_imports: Callable[[Iterable[int]], None] = lambda fids: None
    _tables: _FileTables | None = None  # lazy lookups: the shared file tables they use
    _preload_parents: Callable[[Iterable[int]], None] = lambda ids: None

    @classmethod
    def load(cls, db: GraphRows) -> Lookup:
        """Every unit and file of the index (a whole-graph resolve, on either backend)."""
        lk = cls()
        units, file_unit = lk.units, lk.file_unit
        by_file_name, by_name, children = lk.by_file_name, lk.by_name, lk.children
        make = Unit._make
        for u in map(make, db.all_units()):
            uid, fid, pid, kind, name, _ = u
            units[uid] = u
            if kind == "file":
                file_unit[fid] = uid
                continue
            by_file_name[(fid, name)].append(uid)
            if kind in CALLABLE_KINDS:
                by_name[name].append(uid)
            if pid is not None:
                children[(pid, name)].append(uid)
        lk._load_files(db.file_paths())
        return lk

    @classmethod
    def lazy(cls, db: StoreBackend) -> Lookup:
        """A lookup that loads units, imports and bases from SQLite on first use: for
        incremental updates, where loading the whole repository's names would dominate."""
        lk = cls()
        loaded: set[str] = set()

        def load_names(names: Iterable[str]) -> None:
            todo = sorted({n for n in names if n not in loaded})
            loaded.update(todo)
            for uid, fid, pid, kind, uname, is_test in graph_edges.units_named(db, todo):
                dict.setdefault(lk.units, uid, Unit(uid, fid, pid, kind, uname, bool(is_test)))
                if kind == "file":
                    continue
                dict.setdefault(lk.by_file_name, (fid, uname), []).append(uid)
                if kind in CALLABLE_KINDS:
                    dict.setdefault(lk.by_name, uname, []).append(uid)
                if pid is not None:
                    dict.setdefault(lk.children, (pid, uname), []).append(uid)

        def load_name(name: str) -> None:
            load_names((name,))

        def load_imports_of(fids: Iterable[int]) -> None:
            todo = sorted({f for f in fids if not dict.__contains__(lk.file_imports, f)})
            found: dict[int, list[tuple[int | None, tuple[str, ...]]]] = {f: [] for f in todo}
            for fid, names, target in graph_edges.imports_of_files(db, todo):
                found[fid].append((target, tuple(n for n in names.split(",") if n)))
            for fid, entries in found.items():
                dict.__setitem__(lk.file_imports, fid, entries)

        lk._preload_names = load_names
        lk._preload_imports = load_imports_of

        def load_parents(ids: Iterable[int]) -> None:
            # two levels: a method's class, and the function a local class sits in; not the
            # file units (a scope's walk stops at them unread, and a common name's definitions
            # sit in thousands of files)
            file_unit = lk.file_unit
            for _ in range(2):
                ids = [u.parent_id for u in map(lk.units.get, ids) if u is not None and u.parent_id is not None
                       and u.parent_id != file_unit.get(u.file_id)]
                lk.preload_units(ids, db)

        lk._preload_parents = load_parents

        def load_unit(uid: int) -> None:
            row = graph_edges.unit_row(db, uid)
            if row is not None:
                dict.__setitem__(lk.units, uid, Unit(row[0], row[1], row[2], row[3], row[4], bool(row[5])))

        def load_imports(fid: int) -> None:
            rows = graph_edges.imports_of_file(db, fid)
            dict.__setitem__(lk.file_imports, fid,
                             [(target, tuple(n for n in names.split(",") if n)) for names, target in rows])

        def load_bases(tid: int) -> None:
            dict.__setitem__(lk.bases, tid, graph_edges.resolved_bases(db, tid))

        lk.units = LazyMap(load_unit)
        lk.by_name = LazyMap(load_name, default=list)
        lk.by_file_name = LazyMap(lambda key: load_name(key[1]), default=list)
        lk.children = LazyMap(lambda key: load_name(key[1]), default=list)
        lk.file_imports = LazyMap(load_imports, default=list)
        lk.bases = LazyMap(load_bases, default=list)
        generation = db.get_meta(FILES_GENERATION)
        key = (db.location, generation)
        tables = _FILES_CACHE.pop(key, None) if generation else None
        if tables is not None:
            _FILES_CACHE[key] = tables  # (the most recently used last)
        if tables is None:
            for fid, uid in graph_edges.file_units(db):
                lk.file_unit[fid] = uid
            lk._load_files(graph_edges.file_paths(db))
            tables = _FileTables(lk.file_unit, lk.file_path, lk.file_stem)
            for stale in [k for k in _FILES_CACHE if k[0] == db.location]:
                del _FILES_CACHE[stale]  # (this repository's tables of another set of files)
            if generation:
                _FILES_CACHE[key] = tables
                while len(_FILES_CACHE) > _FILES_CACHED:
                    del _FILES_CACHE[next(iter(_FILES_CACHE))]
        else:
            lk.file_unit, lk.file_path, lk.file_stem = tables.file_unit, tables.file_path, tables.file_stem
            lk._stems_ready = False
        lk._tables = tables
        return lk

    def _load_files(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for fid, path in rows:
            self.file_path[fid] = path
            self.file_stem[fid] = split_path(path)[1]
        self._stems_ready = False

    def ensure_stems(self) -> None:
        """Path suffix tables for import resolution, built on first need (and kept for the
        next lookup over the same files: a watcher's incremental updates reuse them)."""
        if getattr(self, "_stems_ready", True):
            return
        self._stems_ready = True
        tables = self._tables
        if tables is not None and tables.stems is not None and tables.dir_stems is not None:
            self.stems, self.dir_stems = tables.stems, tables.dir_stems
            return
        stems: dict[str, list[int]] = defaultdict(list)
        dir_stems: dict[str, list[int]] = defaultdict(list)
        for fid, path in self.file_path.items():
            for stem in path_stems(path):
                stems[stem].append(fid)
            parent = path.split("/")[:-1]
            for i in range(len(parent)):
                dir_stems["/".join(parent[i:])].append(fid)
        for files in stems.values():
            if len(files) > 1:
                files.sort(key=self.file_path.__getitem__)
        self.stems, self.dir_stems = stems, dir_stems
        if tables is not None:
            tables.stems, tables.dir_stems = stems, dir_stems

    def preload_calls(self, db: StoreBackend, rows: Sequence[tuple[Any, ...]]) -> None:
        """For a lazy lookup, read what resolving these call rows (id, src, src_file, name, ...)
        needs in a few queries instead of one or two per call."""
        if not isinstance(self.units, LazyMap):
            return
        self.preload_units((r[1] for r in rows), db)
        self._preload_names(r[3] for r in rows)
        self._preload_imports(r[2] for r in rows)
        # the callers' and the candidates' enclosing units: where a definition is visible
        names = {r[3] for r in rows}
        self._preload_parents([r[1] for r in rows] + [u for n in names for u in dict.get(self.by_name, n, ())])

    def preload_units(self, ids: Iterable[int], db: StoreBackend) -> None:
        """Read the given units in a few queries (a lazy lookup would read them one by one)."""
        if not isinstance(self.units, LazyMap):
            return
        missing = sorted({i for i in ids if i is not None and not dict.__contains__(self.units, i)})
        for uid, fid, pid, kind, name, is_test in graph_edges.units_by_id(db, missing):
            dict.__setitem__(self.units, uid, Unit(uid, fid, pid, kind, name, bool(is_test)))
        self.units._tried.update(missing)

