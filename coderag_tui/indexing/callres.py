"""Name resolution over a `Lookup`: which unit a call, a base class or an import names.

Calls: the enclosing class for `self.x()`/`this.x()`, then a definition local to the calling
function, then the same file, then what the file imports, then a unique name in the repository;
otherwise the call stays a name (an external API). A definition inside a function is visible
only inside that function: a test's local `class View` is never the `View` another function
subclasses or calls. Imports: module text -> a file by path suffix (see `modpaths`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from coderag_tui.indexing.modpaths import closest, module_parts
from coderag_tui.parsing.identifiers import base_name

if TYPE_CHECKING:
    from coderag_tui.indexing.lookup import Unit

SELF_NAMES = frozenset({"self", "this", "cls", "super()", "super", "@", "static", "Self"})
CALLABLE_KINDS = frozenset(
    {"function", "method", "class", "struct", "constructor", "macro", "interface", "trait",
     "enum", "record", "object", "type", "impl", "module", "protocol"}
)
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "record", "object",
                        "protocol", "type", "impl"})
INTERFACE_KINDS = frozenset({"interface", "trait", "protocol"})
# the units whose definitions are local to them (a closure, a test's helper class)
LOCAL_SCOPES = frozenset({"function", "method", "constructor"})
MISS = object()
PYTHON_SUFFIXES = (".py", ".pyi", ".pyx")
ROOT_FOLDERS = frozenset({"", "src", "lib", "python"})  # where a repository's own packages start


def _module_prefix(path: str, depth: int) -> str:
    """The folder a Python module's top segment sits in, for a path matched by `depth` segments
    (`src/flask/__init__.py`, 1 -> `src`; `a/b/c.py`, 2 -> `a`)."""
    segs = path.rsplit(".", 1)[0].split("/")
    if segs[-1] == "__init__":
        segs = segs[:-1]
    return "/".join(segs[: max(len(segs) - depth, 0)])


class Resolver:
    """The resolution half of `Lookup` (which holds these tables and loads them)."""

    units: dict[int, Unit]
    by_name: dict[str, list[int]]
    by_file_name: dict[tuple[int, str], list[int]]
    children: dict[tuple[int, str], list[int]]
    file_unit: dict[int, int]
    file_path: dict[int, str]
    file_stem: dict[int, str]
    stems: dict[str, list[int]]
    dir_stems: dict[str, list[int]]
    file_imports: dict[int, list[tuple[int | None, tuple[str, ...]]]]
    bases: dict[int, list[int]]
    _maps: dict[int, tuple[dict[str, list[int]], dict[str, list[int]], list[int]]]
    _calls: dict[tuple[int, str, str], int | None]
    _members: dict[tuple[int, str, bool], int | None]
    _types: dict[int, Any]
    _homes: dict[int, int | None]
    _scoped: dict[str, tuple[list[int], list[int]]]
    _preload_parents: Callable[[Iterable[int]], None]
    _packages: set[str]
    ensure_stems: Callable[[], None]

    # ---------------------------------------------------------------- imports
    def resolve_module(self, module: str, names: tuple[str, ...], from_file: int) -> int | None:
        """The file an import refers to (None when it is outside the repository)."""
        if not module:
            return None
        self.ensure_stems()
        src = self.file_path.get(from_file, "")
        parts = module_parts(module, src)
        if parts is None:
            return None
        python = src.endswith(PYTHON_SUFFIXES)
        candidates = ([parts + [names[0]]] if names else []) + [parts]
        for cand in candidates:
            files = self.stems.get("/".join(cand))
            if files and python:
                hit = self._python_module(files, len(cand), src, absolute=not module.startswith("."))
                if hit is not None:
                    return hit
            elif files:
                return closest(files, src, self.file_path)
        # a package that is a directory (Go, Java packages): its files. Not for Python, whose
        # packages are found above by their `__init__.py`: a folder called `celery` holding a
        # project's scripts, or one of templates called `flask`, is not the package imported
        for start in range(len(parts) if not python else 0):
            files = self.dir_stems.get("/".join(parts[start:]))
            if files:
                return closest(files, src, self.file_path)
        # a symbol imported from a module: drop trailing segments (Java static imports, Rust paths)
        for length in range(len(parts) - 1, 0, -1):
            files = self._of_language(self.stems.get("/".join(parts[:length])), python)
            if files:
                return closest(files, src, self.file_path)
        return None

    def _of_language(self, files: list[int] | None, python: bool) -> list[int] | None:
        if not files or not python:
            return files
        return [f for f in files if self.file_path[f].endswith(PYTHON_SUFFIXES)]

    def _python_module(self, files: list[int], depth: int, src: str, *, absolute: bool) -> int | None:
        """Of the files whose path ends with a Python import's `depth` segments, the module it
        names: a Python file; for an absolute import, one whose top segment is not inside a
        package (`tests/apps/inner/flask.py` in a package `inner` is `inner.flask`, not
        `flask`; `src/flask/logging.py` is not `logging`, even for its neighbours: Python 3 has
        no implicit relative imports), preferring one whose top sits where Python would look:
        the importer's folder or one above it (a script's siblings, the repository's top) or
        src/ or lib/, so an example's own flask.py is not the flask a test imports."""
        found = [f for f in files if self.file_path[f].endswith(PYTHON_SUFFIXES)]
        if not found or not absolute:
            return closest(found, src, self.file_path) if found else None
        packages = self._package_dirs()
        folders = src.split("/")[:-1]
        rooted = [f for f in found if _module_prefix(self.file_path[f], depth) not in packages]
        visible = ROOT_FOLDERS | {"/".join(folders[:i]) for i in range(len(folders) + 1)}
        seen = [f for f in rooted if _module_prefix(self.file_path[f], depth) in visible]
        # none rooted: a module of a package is not what `import logging` names (the stdlib's is)
        return closest(seen or rooted, src, self.file_path) if rooted else None

    def _package_dirs(self) -> set[str]:
        """The folders that hold an `__init__.py` (Python packages), computed once per lookup."""
        found: set[str] | None = getattr(self, "_packages", None)
        if found is None:
            found = {p.rsplit("/", 1)[0] if "/" in p else "" for p in self.file_path.values()
                     if p.endswith(("/__init__.py", "/__init__.pyi")) or p in ("__init__.py", "__init__.pyi")}
            self._packages = found
        return found

    # ---------------------------------------------------------------- calls
    def resolve_call(self, src: int, name: str, receiver: str) -> int | None:
        unit = self.units.get(src)
        if unit is None:
            return None
        if receiver in SELF_NAMES or receiver.startswith(("self.", "this.")):
            cls_id = self._types.get(src, MISS)
            if cls_id is MISS:
                cls_id = self._types[src] = self._enclosing_type(unit)
            if cls_id is not None:
                via_super = receiver.startswith("super")
                member_key = (cls_id, name, via_super)
                hit = self._members.get(member_key, MISS)
                if hit is MISS:
                    hit = self._members[member_key] = self._self_member(cls_id, name, via_super)
                if hit is not None:
                    return hit  # type: ignore[return-value]
        if not receiver:
            inner = self._in_scope(src, self.scoped(name)[0])
            if inner is not None:
                return inner
        # the rest depends on the file, the name and the receiver only: many calls repeat
        key = (unit.file_id, name, receiver)
        found = self._calls.get(key, MISS)
        if found is MISS:
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
        everywhere = self.scoped(name)[1]
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
        local, outer = self.scoped(name)
        inner = self._in_scope(src, [u for u in local if u != src and self.units[u].kind in TYPE_KINDS])
        if inner is not None:
            return inner
        visible = set(outer)
        candidates = [u for u in self.by_file_name.get((unit.file_id, name), ()) if u != src and u in visible]
        types = [u for u in candidates if self.units[u].kind in TYPE_KINDS]
        if types:
            return types[0]
        for target_file, _names in self.file_imports.get(unit.file_id, ()):
            if target_file is None:
                continue
            hits = [u for u in self.by_file_name.get((target_file, name), ())
                    if u in visible and self.units[u].kind in TYPE_KINDS]
            if hits:
                return hits[0]
        found = None  # the one type of that name in the repository, if there is exactly one
        for u in outer:
            if u != src and self.units[u].kind in TYPE_KINDS:
                if found is not None:
                    return None
                found = u
        return found

    # ---------------------------------------------------------------- scopes
    def scoped(self, name: str) -> tuple[list[int], list[int]]:
        """The units of a name split in two: those defined inside a function, and the others."""
        hit = self._scoped.get(name)
        if hit is None:
            ids = self.by_name.get(name, ())
            if ids:
                self._preload_parents(ids)
            local = [u for u in ids if self._home(u) is not None]
            hit = self._scoped[name] = (local, [u for u in ids if self._home(u) is None] if local else list(ids))
        return hit

    def _home(self, uid: int) -> int | None:
        """The innermost function a unit is defined in (None: the file, a class or a namespace
        holds it, and whoever imports or names it can see it)."""
        home = self._homes.get(uid, MISS)
        if home is MISS:
            home = None
            unit = self.units.get(uid)
            while unit is not None and unit.parent_id is not None:
                if unit.parent_id == self.file_unit.get(unit.file_id):
                    break
                parent = self.units.get(unit.parent_id)
                if parent is None or parent.kind == "file":
                    break
                if parent.kind in LOCAL_SCOPES:
                    home = parent.id
                    break
                unit = parent
            self._homes[uid] = home
        return home  # type: ignore[return-value]

    def _in_scope(self, src: int, local: list[int]) -> int | None:
        """Of units defined inside functions, the one defined nearest around `src` (in `src`
        itself, or in a function that encloses it), or None."""
        if not local:
            return None
        homes: dict[int | None, int] = {}
        for u in local:
            if self.units[u].kind in CALLABLE_KINDS:
                homes.setdefault(self._home(u), u)
        uid: int | None = src
        while uid is not None:
            if uid in homes:
                return homes[uid]
            unit = self.units.get(uid)
            if unit is None or unit.kind == "file":
                return None
            uid = unit.parent_id
        return None

    def _enclosing_type(self, unit: Unit) -> int | None:
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
            if u.kind not in CALLABLE_KINDS or self._home(uid) is not None:
                continue
            if best is None or (self.units[best].parent_id != self.file_unit.get(u.file_id)
                                and u.parent_id == self.file_unit.get(u.file_id)):
                best = uid
        return best

