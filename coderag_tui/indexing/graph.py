"""Resolve edge targets: calls, bases and imports to the units and files they name.

Calls: the enclosing class for `self.x()`/`this.x()`, then the same file, then what the file
imports, then a unique name in the repository; otherwise the call stays a name (an external API).
Imports: module text -> a file by path suffix (`a.b.c`, `./c`, `a/b/c.h`, `crate::a::c`).
TESTS edges are derived: a test unit that calls a unit tests it; a test file tests the file
its name points at (test_foo.py -> foo.py).

Resolution is deterministic given the index, so an incremental update that re-resolves every
edge whose answer could have changed gives the same graph as a fresh build.
"""

from __future__ import annotations

import functools
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from coderag_tui.parsing.extract import is_test_path
from coderag_tui.parsing.identifiers import MODULE_SPLIT, base_name
from coderag_tui.store.db import Database
from coderag_tui.store.write import FILES_GENERATION

SELF_NAMES = frozenset({"self", "this", "cls", "super()", "super", "@", "static", "Self"})
CALLABLE_KINDS = frozenset(
    {"function", "method", "class", "struct", "constructor", "macro", "interface", "trait",
     "enum", "record", "object", "type", "impl", "module", "protocol"}
)
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "record", "object",
                        "protocol", "type", "impl"})
INTERFACE_KINDS = frozenset({"interface", "trait", "protocol"})
_MISS = object()
_INDEX_STEMS = frozenset({"__init__", "index", "mod", "main", "lib"})
_TEST_NAME = [
    (re.compile(r"^test_(.+)$"), r"\1"),
    (re.compile(r"^(.+)_tests?$"), r"\1"),
    (re.compile(r"^(.+)\.(test|spec)$"), r"\1"),
    (re.compile(r"^(.+?)Tests?$"), r"\1"),
    (re.compile(r"^tests?_?(.+)$"), r"\1"),
]


@dataclass
class _FileTables:
    """A repository's file tables (file unit, path and stem by file id) and, once built, its path
    suffix tables for import resolution. Shared read-only between lookups."""

    file_unit: dict[int, int]
    file_path: dict[int, str]
    file_stem: dict[int, str]
    stems: dict[str, list[int]] | None = None
    dir_stems: dict[str, list[int]] | None = None


# The last repository's file tables, keyed by the database and its `files_generation` (meta: a
# new random value whenever a file is added, removed or renamed), so the watcher's batches that
# only edit files neither read every file nor rebuild the suffix tables again.
_FILES_CACHE: dict[tuple[str, str], _FileTables] = {}


class _Unit(NamedTuple):
    """A unit as resolution sees it (a tuple: `Lookup.load` makes one per unit of the index)."""

    id: int
    file_id: int
    parent_id: int | None
    kind: str
    name: str
    is_test: bool


class _LazyMap(dict):
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
class Lookup:
    """In-memory view of the units and files needed to resolve names."""

    units: dict[int, _Unit] = field(default_factory=dict)
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
    _preload_names: Callable[[Iterable[str]], None] = lambda names: None
    _preload_imports: Callable[[Iterable[int]], None] = lambda fids: None
    _tables: _FileTables | None = None  # lazy lookups: the shared file tables they use

    @classmethod
    def load(cls, db: Database) -> Lookup:
        lk = cls()
        units, file_unit = lk.units, lk.file_unit
        by_file_name, by_name, children = lk.by_file_name, lk.by_name, lk.children
        make = _Unit._make
        for u in map(make, db.execute("SELECT id, file_id, parent_id, kind, name, is_test<>0 FROM units")):
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
        lk._load_files(db)
        return lk

    @classmethod
    def lazy(cls, db: Database) -> Lookup:
        """A lookup that loads units, imports and bases from SQLite on first use: for
        incremental updates, where loading the whole repository's names would dominate."""
        lk = cls()
        loaded: set[str] = set()

        def load_names(names: Iterable[str]) -> None:
            todo = sorted({n for n in names if n not in loaded})
            loaded.update(todo)
            for i in range(0, len(todo), 500):
                part = todo[i : i + 500]
                marks = ",".join("?" * len(part))
                for uid, fid, pid, kind, uname, is_test in db.execute(
                    f"SELECT id, file_id, parent_id, kind, name, is_test FROM units WHERE name IN ({marks}) "
                    f"ORDER BY id", part
                ):
                    dict.setdefault(lk.units, uid, _Unit(uid, fid, pid, kind, uname, bool(is_test)))
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
            for i in range(0, len(todo), 500):
                part = todo[i : i + 500]
                marks = ",".join("?" * len(part))
                for fid, names, target in db.execute(
                        f"SELECT e.src_file, e.receiver, t.file_id FROM edges e LEFT JOIN units t ON t.id = e.dst "
                        f"WHERE e.src_file IN ({marks}) AND e.kind='IMPORTS' ORDER BY e.id", part):
                    found[fid].append((target, tuple(n for n in names.split(",") if n)))
            for fid, entries in found.items():
                dict.__setitem__(lk.file_imports, fid, entries)

        lk._preload_names = load_names
        lk._preload_imports = load_imports_of

        def load_unit(uid: int) -> None:
            row = db.one("SELECT id, file_id, parent_id, kind, name, is_test FROM units WHERE id=?", (uid,))
            if row is not None:
                dict.__setitem__(lk.units, uid, _Unit(row[0], row[1], row[2], row[3], row[4], bool(row[5])))

        def load_imports(fid: int) -> None:
            rows = db.rows(
                "SELECT e.receiver, t.file_id FROM edges e LEFT JOIN units t ON t.id = e.dst "
                "WHERE e.src_file=? AND e.kind='IMPORTS' ORDER BY e.id", (fid,))
            dict.__setitem__(lk.file_imports, fid,
                             [(target, tuple(n for n in names.split(",") if n)) for names, target in rows])

        def load_bases(tid: int) -> None:
            rows = db.rows("SELECT dst FROM edges WHERE src=? AND kind IN ('INHERITS','IMPLEMENTS') "
                           "AND dst IS NOT NULL ORDER BY id", (tid,))
            dict.__setitem__(lk.bases, tid, [r[0] for r in rows])

        lk.units = _LazyMap(load_unit)
        lk.by_name = _LazyMap(load_name, default=list)
        lk.by_file_name = _LazyMap(lambda key: load_name(key[1]), default=list)
        lk.children = _LazyMap(lambda key: load_name(key[1]), default=list)
        lk.file_imports = _LazyMap(load_imports, default=list)
        lk.bases = _LazyMap(load_bases, default=list)
        generation = db.get_meta(FILES_GENERATION)
        key = (str(db.path), generation)
        tables = _FILES_CACHE.get(key) if generation else None
        if tables is None:
            for fid, uid in db.execute("SELECT file_id, id FROM units WHERE kind='file'"):
                lk.file_unit[fid] = uid
            lk._load_files(db)
            tables = _FileTables(lk.file_unit, lk.file_path, lk.file_stem)
            _FILES_CACHE.clear()  # one repository's tables at a time
            if generation:
                _FILES_CACHE[key] = tables
        else:
            lk.file_unit, lk.file_path, lk.file_stem = tables.file_unit, tables.file_path, tables.file_stem
            lk._stems_ready = False
        lk._tables = tables
        return lk

    def _load_files(self, db: Database) -> None:
        for fid, path in db.execute("SELECT id, path FROM files"):
            self.file_path[fid] = path
            self.file_stem[fid] = _split_path(path)[1]
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
            for stem in _path_stems(path):
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

    def preload_calls(self, db: Database, rows: Sequence[tuple[Any, ...]]) -> None:
        """For a lazy lookup, read what resolving these call rows (id, src, src_file, name, ...)
        needs in a few queries instead of one or two per call."""
        if not isinstance(self.units, _LazyMap):
            return
        self.preload_units((r[1] for r in rows), db)
        self._preload_names(r[3] for r in rows)
        self._preload_imports(r[2] for r in rows)

    def preload_units(self, ids: Iterable[int], db: Database) -> None:
        """Read the given units in a few queries (a lazy lookup would read them one by one)."""
        if not isinstance(self.units, _LazyMap):
            return
        missing = sorted({i for i in ids if i is not None and not dict.__contains__(self.units, i)})
        for i in range(0, len(missing), 500):
            part = missing[i : i + 500]
            marks = ",".join("?" * len(part))
            for uid, fid, pid, kind, name, is_test in db.execute(
                    f"SELECT id, file_id, parent_id, kind, name, is_test FROM units WHERE id IN ({marks})", part):
                dict.__setitem__(self.units, uid, _Unit(uid, fid, pid, kind, name, bool(is_test)))
            self.units._tried.update(part)

    # ---------------------------------------------------------------- imports
    def resolve_module(self, module: str, names: tuple[str, ...], from_file: int) -> int | None:
        """The file an import refers to (None when it is outside the repository)."""
        if not module:
            return None
        self.ensure_stems()
        src = self.file_path.get(from_file, "")
        parts = _module_parts(module, src)
        if parts is None:
            return None
        candidates = ([parts + [names[0]]] if names else []) + [parts]
        for cand in candidates:
            files = self.stems.get("/".join(cand))
            if files:
                return _closest(files, src, self.file_path)
        # a package that is a directory (Go, Java packages): its files
        for start in range(len(parts)):
            files = self.dir_stems.get("/".join(parts[start:]))
            if files:
                return _closest(files, src, self.file_path)
        # a symbol imported from a module: drop trailing segments (Java static imports, Rust paths)
        for length in range(len(parts) - 1, 0, -1):
            files = self.stems.get("/".join(parts[:length]))
            if files:
                return _closest(files, src, self.file_path)
        return None

    # ---------------------------------------------------------------- calls
    def resolve_call(self, src: int, name: str, receiver: str) -> int | None:
        unit = self.units.get(src)
        if unit is None:
            return None
        if receiver in SELF_NAMES or receiver.startswith(("self.", "this.")):
            cls_id = self._types.get(src, _MISS)
            if cls_id is _MISS:
                cls_id = self._types[src] = self._enclosing_type(unit)
            if cls_id is not None:
                via_super = receiver.startswith("super")
                member_key = (cls_id, name, via_super)
                hit = self._members.get(member_key, _MISS)
                if hit is _MISS:
                    hit = self._members[member_key] = self._self_member(cls_id, name, via_super)
                if hit is not None:
                    return hit  # type: ignore[return-value]
        # the rest depends on the file, the name and the receiver only: many calls repeat
        key = (unit.file_id, name, receiver)
        found = self._calls.get(key, _MISS)
        if found is _MISS:
            found = self._calls[key] = self._resolve_in_file(unit.file_id, name, receiver)
        return found  # type: ignore[return-value]

    def _self_member(self, cls_id: int, name: str, via_super: bool) -> int | None:
        if not via_super:
            return self._member(cls_id, name, depth=0)
        for base in self.bases.get(cls_id, ()):
            hit = self._member(base, name, depth=1)
            if hit is not None:
                return hit
        return None

    def _resolve_in_file(self, fid: int, name: str, receiver: str) -> int | None:
        # Every step below picks among the callables of this name: with none there is no answer,
        # and with one it is the answer (most calls name a builtin, an external API or a unique
        # function, so the steps run only for names defined more than once)
        everywhere = self.by_name.get(name, ())
        if len(everywhere) <= 1:
            return everywhere[0] if everywhere else None
        heads, named, unnamed = self._import_maps(fid)
        if receiver and receiver not in SELF_NAMES:
            # `module.func()` where module is an import of this file
            for target_file in heads.get(receiver.split(".")[0], ()):
                hit = self._pick(self.by_file_name.get((target_file, name), ()))
                if hit is not None:
                    return hit
        local = self._pick(self.by_file_name.get((fid, name), ()))
        if local is not None and not receiver:
            return local
        for target_file in (*named.get(name, ()), *unnamed):
            hit = self._pick(self.by_file_name.get((target_file, name), ()))
            if hit is not None:
                return hit
        if local is not None and receiver:
            # `obj.get()` on an object of unknown type is not this file's `get` of some other
            # class (a ContextVar's `.get` is not `_AppCtxGlobals.get`); `Cls.get()` is Cls's
            pid = self.units[local].parent_id
            parent = self.units.get(pid) if pid is not None else None
            if parent is None or parent.kind == "file" or receiver.split(".")[-1] != parent.name:
                return None
        return local

    def _import_maps(self, fid: int) -> tuple[dict[str, list[int]], dict[str, list[int]], list[int]]:
        """For a file: import heads (module stem or imported name -> files), names -> files,
        and the files imported without names (every name of theirs is visible)."""
        cached = self._maps.get(fid)
        if cached is not None:
            return cached
        heads: dict[str, list[int]] = defaultdict(list)
        named: dict[str, list[int]] = defaultdict(list)
        unnamed: list[int] = []
        for target_file, names in self.file_imports.get(fid, ()):
            if target_file is None:
                continue
            heads[self.file_stem[target_file]].append(target_file)
            for n in names:
                heads[n].append(target_file)
                named[n].append(target_file)
            if not names or "*" in names:
                unnamed.append(target_file)
        self._maps[fid] = (heads, named, unnamed)
        return self._maps[fid]

    def resolve_base(self, src: int, text: str) -> int | None:
        name = base_name(text)
        if not name:
            return None
        unit = self.units.get(src)
        if unit is None:
            return None
        candidates = [u for u in self.by_file_name.get((unit.file_id, name), ()) if u != src]
        types = [u for u in candidates if self.units[u].kind in TYPE_KINDS]
        if types:
            return types[0]
        for target_file, _names in self.file_imports.get(unit.file_id, ()):
            if target_file is None:
                continue
            hits = [u for u in self.by_file_name.get((target_file, name), ())
                    if self.units[u].kind in TYPE_KINDS]
            if hits:
                return hits[0]
        found = None  # the one type of that name in the repository, if there is exactly one
        for u in self.by_name.get(name, ()):
            if u != src and self.units[u].kind in TYPE_KINDS:
                if found is not None:
                    return None
                found = u
        return found

    def _enclosing_type(self, unit: _Unit) -> int | None:
        pid = unit.parent_id
        while pid is not None:
            parent = self.units.get(pid)
            if parent is None or parent.kind == "file":
                return None
            if parent.kind in TYPE_KINDS:
                return parent.id
            pid = parent.parent_id
        return None

    def _member(self, type_id: int, name: str, depth: int) -> int | None:
        hits = self.children.get((type_id, name))
        if hits:
            return hits[0]
        if depth < 3:
            for base in self.bases.get(type_id, ()):
                hit = self._member(base, name, depth + 1)
                if hit is not None:
                    return hit
        return None

    def _pick(self, ids: Iterable[int]) -> int | None:
        best = None
        for uid in ids:
            u = self.units[uid]
            if u.kind not in CALLABLE_KINDS:
                continue
            if best is None or (self.units[best].parent_id != self.file_unit.get(u.file_id)
                                and u.parent_id == self.file_unit.get(u.file_id)):
                best = uid
        return best


@functools.lru_cache(maxsize=1 << 17)
def _split_path(path: str) -> tuple[tuple[str, ...], str, str]:
    """(folders, stem, suffix) of a POSIX path, without pathlib (this runs for every file; cached)."""
    parts = path.split("/")
    name = parts[-1]
    dot = name.rfind(".")
    if dot > 0:
        return tuple(parts[:-1]), name[:dot], name[dot:]
    return tuple(parts[:-1]), name, ""


def _path_stems(path: str) -> list[str]:
    folders, stem, suffix = _split_path(path)
    parts = [*folders, stem]
    stems = ["/".join(parts[i:]) for i in range(len(parts))]
    if stem in _INDEX_STEMS and folders:
        stems.extend("/".join(folders[i:]) for i in range(len(folders)))
    # C/C++ includes name the file with its extension
    if suffix in (".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp"):
        full = [*folders, stem + suffix]
        stems.extend("/".join(full[i:]) for i in range(len(full)))
    return stems


def _module_parts(module: str, src_path: str) -> list[str] | None:
    m = module.strip().strip("\"'<>")
    if not m:
        return None
    if not m.startswith("."):
        segs = _absolute_parts(m)
        return list(segs) if segs else None
    src_dir = list(_parts(src_path)[:-1])
    if m.startswith("./") or m.startswith("../"):
        parts = src_dir[:]
        for seg in m.split("/"):
            if seg == "..":
                if parts:
                    parts.pop()
            elif seg and seg != ".":
                parts.append(seg)
        last = parts[-1] if parts else ""
        if "." in last:
            parts[-1] = last.rsplit(".", 1)[0]
        return parts
    dots = len(m) - len(m.lstrip("."))
    parts = src_dir[: len(src_dir) - (dots - 1)] if dots > 1 else src_dir[:]
    rest = m[dots:]
    return parts + ([s for s in MODULE_SPLIT.split(rest) if s] if rest else [])


@functools.lru_cache(maxsize=1 << 16)
def _absolute_parts(m: str) -> tuple[str, ...]:
    """The path segments of a module named from the repository's roots (`a.b`, `a/b.h`, `crate::a`)."""
    for prefix in ("crate::", "super::", "self::", "@/", "~/"):
        if m.startswith(prefix):
            m = m[len(prefix) :]
    segs = [s for s in MODULE_SPLIT.split(m) if s]
    if segs and "." in m and m.rsplit(".", 1)[-1] in ("h", "hpp", "hh", "js", "ts", "py", "rb", "php"):
        segs = [s for s in m.split("/") if s]
    return tuple(segs)


@functools.lru_cache(maxsize=65536)
def _parts(path: str) -> tuple[str, ...]:
    """PurePosixPath(path).parts for the relative POSIX paths of the index, without pathlib."""
    return tuple(p for p in path.split("/") if p and p != ".")


def _closest(files: list[int], src_path: str, paths: dict[int, str]) -> int:
    """The file sharing the most leading path parts with src_path; ties: fewer parts, then path."""
    if len(files) == 1:
        return files[0]
    best = [(fid, _parts(paths[fid])) for fid in files]
    # keep those that share one more leading part, while any do (a stem like `django` names
    # ~1,000 translation files in Django's tree: one list pass per level, not a loop per file)
    for depth, part in enumerate(_parts(src_path)):
        closer = [fp for fp in best if len(fp[1]) > depth and fp[1][depth] == part]
        if not closer:
            break
        best = closer
    return min(best, key=lambda fp: (len(fp[1]), paths[fp[0]]))[0]


def _test_target_stem(path: str) -> str | None:
    p = PurePosixPath(path)
    name = p.name.split(".")[0] if ".test." in p.name or ".spec." in p.name else p.stem
    for pattern, repl in _TEST_NAME:
        if pattern.match(name):
            stem = pattern.sub(repl, name)
            return stem if stem and stem != name else None
    return None


# ---------------------------------------------------------------------------- resolution


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


def plan_full(db: Database) -> FullPlan:
    """Resolve every edge, reading only: it can run on its own connection while the writer is
    busy (a fresh build creates its indexes meanwhile). `apply_full` writes the answer."""
    lk = Lookup.load(db)
    import_updates, fresh_imports, _ = _resolve_imports(
        lk, db.execute("SELECT id, src_file, name, receiver, dst FROM edges WHERE kind='IMPORTS'"))
    lk.file_imports = fresh_imports
    base_updates, lk.bases = _resolve_bases(
        lk, db.rows("SELECT id, src, src_file, name, dst, kind FROM edges WHERE kind IN ('INHERITS','IMPLEMENTS')"))
    call_updates: list[tuple[int | None, int]] = []
    resolved: list[tuple[int, int, int, int]] = []  # test files' calls: the rows TESTS are derived from
    test_files = {fid for fid, path in lk.file_path.items() if is_test_path(path)}
    resolve_call = lk.resolve_call
    answers = lk._calls  # resolve_call's answers by (file, name, receiver): read them here first
    # every answer is a unit of the called name: a name no unit has resolves to nothing (a
    # builtin or an external API: ~30% of Django's calls)
    defined = {name for _, name in lk.by_file_name}
    for eid, src, fid, name, receiver, dst, line in db.execute(
        "SELECT id, src, src_file, name, receiver, dst, line FROM edges WHERE kind='CALLS'"
    ):
        if name not in defined:
            if dst is not None:
                call_updates.append((None, eid))
            continue
        if receiver in SELF_NAMES or receiver.startswith(("self.", "this.")):
            target = resolve_call(src, name, receiver)
        else:
            known: Any = answers.get((fid, name, receiver), _MISS)
            target = resolve_call(src, name, receiver) if known is _MISS else known
        if target != dst:
            call_updates.append((target, eid))
        if target is not None and fid in test_files:
            resolved.append((src, fid, target, line))
    return FullPlan(import_updates, base_updates, call_updates, _tests_rows(lk, resolved, list(lk.file_path)))


def apply_full(db: Database, plan: FullPlan, *, fresh: bool = False) -> int:
    """Write a `plan_full` answer (in the caller's transaction). Returns the edges updated.

    `fresh`: the edges were all just written by a build (no TESTS edges or orphaned calls yet),
    so the two scans of every edge that clear those are skipped."""
    db.executemany("UPDATE edges SET dst=? WHERE id=?", plan.imports)
    db.executemany("UPDATE edges SET dst=?, kind=? WHERE id=?", plan.bases)
    db.executemany("UPDATE edges SET dst=? WHERE id=?", plan.calls)
    if not fresh:
        db.execute("UPDATE edges SET orphan='' WHERE orphan<>'' AND dst IS NOT NULL")
        db.execute("DELETE FROM edges WHERE kind='TESTS'")
    db.executemany("INSERT INTO edges(src, src_file, dst, kind, name, line) VALUES(?,?,?,'TESTS',?,?)", plan.tests)
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


def resolve(db: Database, *, changed_files: set[int] | None, names: set[str], files_changed: bool = True,
            edge_ids: set[int] | None = None) -> int:
    """Re-resolve the edges whose target may have changed. Returns the number of edges updated.

    changed_files None means everything (a fresh build). Otherwise: edges from changed files,
    edges that name one of `names` (defined in changed files before or after), and, when the
    set of files changed (`files_changed`: files added or deleted), every import.
    """
    if changed_files is None:
        return apply_full(db, plan_full(db))
    changed = changed_files
    lk = Lookup.lazy(db)

    # 1. imports (they feed call resolution)
    if files_changed:
        import_rows = db.rows("SELECT id, src_file, name, receiver, dst FROM edges WHERE kind='IMPORTS'")
    else:
        marks = ",".join("?" * len(changed))
        import_rows = db.rows(f"SELECT id, src_file, name, receiver, dst FROM edges WHERE kind='IMPORTS' "
                              f"AND src_file IN ({marks}) ORDER BY id", tuple(changed)) if changed else []
    import_updates, fresh_imports, files_with_new_imports = _resolve_imports(lk, import_rows)
    db.executemany("UPDATE edges SET dst=? WHERE id=?", import_updates)
    for fid in changed:
        fresh_imports.setdefault(fid, [])
    for fid, entries in fresh_imports.items():
        dict.__setitem__(lk.file_imports, fid, entries)

    # 2. bases (they feed self-call resolution through inherited members)
    # (through the covering index edges_bases; an INHERITS edge's receiver is its base's name)
    base_rows = db.rows(
        "SELECT id, src, src_file, name, dst, kind FROM edges WHERE kind IN ('INHERITS','IMPLEMENTS') "
        "AND (src_file IN (SELECT value FROM json_each(?1)) OR receiver IN (SELECT value FROM json_each(?2)) "
        "OR id IN (SELECT value FROM json_each(?3)))",
        (json.dumps(sorted(changed | files_with_new_imports)), json.dumps(sorted(names)),
         json.dumps(sorted(edge_ids or ()))))
    base_updates, _ = _resolve_bases(lk, base_rows)
    db.executemany("UPDATE edges SET dst=?, kind=? WHERE id=?", base_updates)
    lk.bases.clear()  # reloaded from the updated rows on use

    # 3. calls
    scope = changed | files_with_new_imports
    calls = "SELECT id, src, src_file, name, receiver, dst FROM edges WHERE kind='CALLS' AND {column} IN ({{marks}})"
    call_rows = [*db.rows_in(calls.format(column="src_file"), sorted(scope)),
                 *db.rows_in(calls.format(column="id"), sorted(edge_ids or ())),
                 *db.rows_in(calls.format(column="name"), sorted(names))]
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
    db.executemany("UPDATE edges SET dst=? WHERE id=?", call_updates)
    # only an edge that was just resolved can stop being an orphan
    resolved = [(u[-1],) for u in (*import_updates, *base_updates, *call_updates) if u[0] is not None]
    db.executemany("UPDATE edges SET orphan='' WHERE id=? AND orphan<>''", resolved)

    # 4. derived TESTS edges: redone for the changed test files, and where a call of another
    # test file now resolves differently
    _derive_tests(db, lk, scope, files_changed,
                  updated_calls=[eid for _, eid in call_updates])
    return len(import_updates) + len(base_updates) + len(call_updates)


def _retest_calls(db: Database, lk: Lookup, done_files: set[int],
                  updated_calls: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """The TESTS edges of test-file calls whose target changed (outside `done_files`, which are
    redone whole): delete those at each such (unit, line) and return every call there to derive
    them again."""
    spots: set[tuple[int, int]] = set()
    ids = list(updated_calls)
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ",".join("?" * len(part))
        for src, fid, line in db.execute(f"SELECT src, src_file, line FROM edges WHERE id IN ({marks})", part):
            if fid not in done_files and is_test_path(lk.file_path.get(fid, "")):
                spots.add((src, line))
    if not spots:
        return []
    db.executemany("DELETE FROM edges WHERE kind='TESTS' AND src=? AND line=? AND NOT EXISTS "
                   "(SELECT 1 FROM units u WHERE u.id = edges.dst AND u.kind = 'file')",  # file-level TESTS stay
                   sorted(spots))
    rows: list[tuple[int, int, int, int]] = []
    for src, line in sorted(spots):
        rows += db.rows("SELECT src, src_file, dst, line FROM edges WHERE kind='CALLS' AND dst IS NOT NULL "
                        "AND src=? AND line=?", (src, line))
    return rows


def _derive_tests(db: Database, lk: Lookup, files: set[int] | None, files_changed: bool = True,
                  updated_calls: Sequence[int] = ()) -> None:
    """TESTS edges: from test units to the code they call (for `files`, and for the calls of
    `updated_calls` elsewhere), and from test files to the file their name points at (for every
    test file when files were added or removed)."""
    if files is None:
        db.execute("DELETE FROM edges WHERE kind='TESTS'")
        rows = db.rows("SELECT src, src_file, dst, line FROM edges WHERE kind='CALLS' AND dst IS NOT NULL")
        file_ids = list(lk.file_path)
    else:
        files = {f for f in files if is_test_path(lk.file_path.get(f, ""))}  # only tests test
        marks = ",".join("?" * len(files))
        if files:
            db.execute(f"DELETE FROM edges WHERE kind='TESTS' AND src_file IN ({marks})", tuple(files))
        rows = db.rows(
            f"SELECT src, src_file, dst, line FROM edges WHERE kind='CALLS' AND dst IS NOT NULL "
            f"AND src_file IN ({marks})",
            tuple(files),
        ) if files else []
        file_ids = [f for f in files if f in lk.file_path]
        rows += _retest_calls(db, lk, files, updated_calls)
        if files_changed:
            # the file -> file edges from test file names (not those of calls made at file level)
            db.execute("DELETE FROM edges WHERE kind='TESTS' AND src IN (SELECT id FROM units WHERE kind='file') "
                       "AND dst IN (SELECT id FROM units WHERE kind='file')")
            file_ids = list(lk.file_path)
    lk.preload_units((x for r in rows for x in (r[0], r[2])), db)
    db.executemany(
        "INSERT INTO edges(src, src_file, dst, kind, name, line) VALUES(?,?,?,'TESTS',?,?)",
        _tests_rows(lk, rows, file_ids),
    )


def _tests_rows(lk: Lookup, calls: Iterable[tuple[int, int, int, int]], file_ids: list[int]
                ) -> list[tuple[int, int, int, str, int]]:
    """TESTS rows from resolved calls (src, src_file, dst, line; their units loaded) and from
    the names of the test files among `file_ids`."""
    new: set[tuple[int, int, int, str, int]] = set()
    unit = dict.get  # loaded: skip a lazy map's per-key check
    for src, fid, dst, line in calls:
        s, d = unit(lk.units, src), unit(lk.units, dst)
        if s is None or d is None or d.is_test or not is_test_path(lk.file_path.get(fid, "")):
            continue
        if is_test_path(lk.file_path.get(d.file_id, "")):
            continue
        new.add((src, fid, dst, d.name, line))
    if file_ids:
        lk.ensure_stems()
    for fid in file_ids:
        path = lk.file_path[fid]
        if not is_test_path(path):
            continue
        stem = _test_target_stem(path)
        if not stem:
            continue
        targets = [f for f in lk.stems.get(stem, ()) if not is_test_path(lk.file_path[f])]
        if targets:
            target = _closest(targets, path, lk.file_path)
            new.add((lk.file_unit[fid], fid, lk.file_unit[target], lk.file_path[target], 1))
    return sorted(new)
