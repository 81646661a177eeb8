"""What the index knows around each change, nearest first.

Level 1: the change, its direct callers (breaking-change risk) and callees. Level 2: its class
or module outline, its tests, similar code. Level 3: imports, constants used, how many
callers and who. Deleted or renamed units list their now-orphaned callers (calls of the old
name the index can no longer resolve); signature changes list the call sites whose arguments
no longer fit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from coderag_tui.models import UnitRef
from coderag_tui.parsing.guard import check_nesting, parse_tree
from coderag_tui.parsing.kinds import CLASS_LIKE
from coderag_tui.parsing.languages import detect_language
from coderag_tui.parsing.records import ParsedFile, ParsedUnit
from coderag_tui.review.changes import DELETED, RENAMED, SIGNATURE, FileSides, UnitChange
from coderag_tui.review.signature import call_args_at, mismatch, param_spec
from coderag_tui.sources.names import fs_path
from coderag_tui.store import read, review

SELF_RECEIVERS = frozenset({"self", "this", "cls", "super()", "super", "@", "Self"})
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]*")
MAX_REFS = 200
IMPLICIT_THIS = frozenset({"java", "cpp", "c_sharp", "csharp", "kotlin", "scala", "swift", "dart", "ruby"})


@dataclass(frozen=True)
class Ref:
    """Another unit around a change: a caller (with the line of its call), callee, test, ..."""

    path: str
    start_line: int
    end_line: int
    qualname: str
    kind: str
    line: int = 0  # the call's line, for callers and tests
    unit_id: int | None = None
    note: str = ""  # "likely" for orphaned callers found by name and imports alone

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def site(self) -> str:
        return f"{self.path}:{self.line or self.start_line}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                               "qualname": self.qualname, "kind": self.kind, "citation": self.citation}
        if self.line:
            out["line"] = self.line
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class CallIssue:
    """A call site whose arguments no longer fit the new signature."""

    caller: Ref
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.caller.path, "line": self.caller.line, "caller": self.caller.qualname,
                "citation": self.caller.citation, "reason": self.reason}


@dataclass
class ChangeContext:
    change: UnitChange
    unit_id: int | None = None  # the changed unit in the index (its new side)
    callers: list[Ref] = field(default_factory=list)
    orphaned: list[Ref] = field(default_factory=list)
    mismatched: list[CallIssue] = field(default_factory=list)
    callees: list[Ref] = field(default_factory=list)
    external_callees: list[str] = field(default_factory=list)
    tests: list[Ref] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)
    similar: list[Ref] = field(default_factory=list)
    outline: str = ""
    outline_range: tuple[str, int, int] = ("", 0, 0)
    imports: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    caller_count: int = 0


def _ref(u: UnitRef, line: int = 0, note: str = "") -> Ref:
    return Ref(u.path, u.start_line, u.end_line, u.qualname, u.kind, line, u.id, note)


class Gatherer:
    """Looks changes up in the index of a CodeRag service (read-only, this thread's connection)."""

    def __init__(self, service: Any, files: Sequence[FileSides], changes: Sequence[UnitChange] = ()) -> None:
        self.service = service
        self.marked: dict[tuple[str, bool], set[str]] = {}  # changed qualnames per (path, new side)
        for c in changes:
            side = c.new is not None
            path = c.path if side else (c.old_path or c.path)
            self.marked.setdefault((path, side), set()).add(c.qualname)
        self.db = service.db
        self.files = {(fs.diff.new_path or fs.diff.path): fs for fs in files}
        self.old_files = {(fs.diff.old_path or fs.diff.path): fs for fs in files}
        self._trees: dict[str, tuple[Any, bytes] | None] = {}
        self._imports_cache: dict[tuple[int, str, str], int] = {}
        self._file_ids: dict[str, int | None] = {}

    # ------------------------------------------------------------------ lookups
    def file_id(self, path: str) -> int | None:
        if path not in self._file_ids:
            self._file_ids[path] = review.file_id(self.db, path)
        return self._file_ids[path]

    def index_unit(self, path: str, u: ParsedUnit) -> UnitRef | None:
        """The indexed unit a parsed unit is (same file, qualified name and kind; nearest line)."""
        rows = [r for r in read.file_outline(self.db, path) if r.qualname == u.qualname and r.kind != "file"]
        if not rows:
            return None
        return min(rows, key=lambda r: (r.kind != u.kind, abs(r.start_line - u.start_line)))

    def _tree(self, path: str) -> tuple[Any, bytes] | None:
        if path not in self._trees:
            self._trees[path] = None
            try:
                data = (self.service.root / fs_path(path)).read_bytes()
            except OSError:
                return None
            spec = detect_language(path, data[:256])
            if spec is None or not spec.parseable:
                return None
            try:
                check_nesting(data, spec.name)  # a segfault here would end the app
                tree = parse_tree(spec.name, data)
            except Exception:  # a grammar that fails to load: no call-site check for this file
                return None
            self._trees[path] = (tree.root_node, data)
        return self._trees[path]

    # ------------------------------------------------------------------ gathering
    def gather(self, change: UnitChange, similar_k: int = 3) -> ChangeContext:
        ctx = ChangeContext(change)
        unit = self.index_unit(change.path, change.new) if change.new is not None else None
        ctx.unit_id = unit.id if unit is not None else None
        if unit is not None:
            self._callers(ctx, unit)
            self._callees(ctx, unit)
            self._tests(ctx, unit)
            self._similar(ctx, unit, similar_k)
        elif change.old is not None:
            ctx.external_callees = sorted({c.name for c in change.old.calls})
        if change.kind in (DELETED, RENAMED) and change.old is not None:
            self._orphans(ctx)
        if change.kind == SIGNATURE:
            self._mismatches(ctx)
        self._outline(ctx)
        self._metadata(ctx)
        return ctx

    def _callers(self, ctx: ChangeContext, unit: UnitRef) -> None:
        ids = [unit.id]
        if ctx.change.unit.name in ("__init__", "constructor") and unit.parent_id is not None:
            parent = read.get_unit(self.db, unit.parent_id)
            if parent is not None and parent.kind in CLASS_LIKE:
                ids.append(parent.id)  # constructing the class calls its constructor
        edges = read.callers(self.db, ids)
        seen: set[tuple[int, int]] = set()
        for e in edges:
            if e.unit is None or (e.unit.id, e.line) in seen:
                continue
            seen.add((e.unit.id, e.line))
            ctx.callers.append(_ref(e.unit, e.line))
        ctx.caller_count = len(ctx.callers)
        ctx.callers = ctx.callers[:MAX_REFS]

    def _callees(self, ctx: ChangeContext, unit: UnitRef) -> None:
        seen: set[int] = set()
        external: set[str] = set()
        for e in read.callees(self.db, [unit.id]):
            if e.unit is None:
                external.add(e.name)
            elif e.unit.id not in seen and e.unit.id != unit.id:
                seen.add(e.unit.id)
                ctx.callees.append(_ref(e.unit, e.line))
        ctx.external_callees = sorted(external)

    def _tests(self, ctx: ChangeContext, unit: UnitRef) -> None:
        seen: set[int] = set()
        for e in read.callers(self.db, [unit.id], kinds=("TESTS",)):
            if e.unit is not None and e.unit.id not in seen:
                seen.add(e.unit.id)
                ctx.tests.append(_ref(e.unit, e.line))
        file_unit = read.file_unit(self.db, ctx.change.path)
        if file_unit is not None:
            ctx.test_files = sorted({e.unit.path for e in read.callers(self.db, [file_unit.id], kinds=("TESTS",))
                                     if e.unit is not None})

    def _similar(self, ctx: ChangeContext, unit: UnitRef, k: int) -> None:
        if k <= 0:
            return
        try:
            hits = self.service.similar(unit.id, k + 1)
        except Exception:  # similar code is a nice-to-have: no vectors yet, no model
            return
        for h in hits:
            u = h.unit
            if u.id == unit.id:
                continue
            if any(r.unit_id == u.id for r in ctx.callers + ctx.callees + ctx.tests):
                continue
            ctx.similar.append(_ref(u))
            if len(ctx.similar) >= k:
                break

    # ------------------------------------------------------------------ orphans
    def _orphans(self, ctx: ChangeContext) -> None:
        """Calls of the old name the index cannot resolve any more (or still resolves to the
        old definition, when the index has not been updated)."""
        change = ctx.change
        old = change.old
        assert old is not None
        old_path = change.old_path or change.path
        names = [old.name]
        if old.kind in CLASS_LIKE and change.kind == DELETED:
            names.extend(change.members)
        rows: list[tuple[Any, ...]] = []
        for name in names:
            rows += review.calls_of(self.db, name, old_path,
                                    old.qualname if name == old.name else f"{old.qualname}.{name}")
        units = read.get_units(self.db, [r[0] for r in rows])
        seen: set[tuple[int, int]] = set()
        for src, src_file, line, receiver, orphan_text, dst, name in rows:
            caller = units.get(src)
            if caller is None or (src, line) in seen:
                continue
            member = name != old.name
            verdict = self._plausible(caller, src_file, receiver, orphan_text, dst, old, old_path, member)
            if verdict is None:
                continue
            seen.add((src, line))
            ctx.orphaned.append(_ref(caller, line, verdict))
        ctx.orphaned = ctx.orphaned[:MAX_REFS]

    def _plausible(self, caller: UnitRef, src_file: int, receiver: str, orphan_text: str, dst: int | None,
                   old: ParsedUnit, old_path: str, member: bool) -> str | None:
        """How surely a call of the old name reached the old unit: "" (surely), "likely" (by its
        name and the caller's imports), or None (it calls something else of that name)."""
        if dst is not None:
            return ""  # a stale index still resolves it to the old definition
        if orphan_text and (old.qualname in orphan_text or old_path in orphan_text):
            return ""
        same_file = caller.path == old_path
        is_method = member or old.kind in ("method", "constructor")
        head = receiver.split(".")[0].split("(")[0]
        if receiver in SELF_RECEIVERS or receiver.startswith(("self.", "this.")):
            if not is_method:
                return None
            owner = ".".join(old.scope) if not member else old.qualname
            return "" if same_file and caller.qualname.startswith(owner + ".") else None
        imports_it = self._imports(src_file, old_path, old.name if not member else "")
        if not receiver:
            if is_method:
                # a bare call reaches a method only from inside its class, in some languages
                owner = old.qualname if member else ".".join(old.scope)
                if caller.language in IMPLICIT_THIS and same_file and caller.qualname.startswith(owner + "."):
                    return ""
                return None
            if same_file or imports_it == 2:
                return ""
            if imports_it:
                return "likely"
            same_dir = PurePosixPath(caller.path).parent == PurePosixPath(old_path).parent
            return "likely" if same_dir and caller.language in ("go", "c", "cpp", "java", "kotlin") else None
        stem = PurePosixPath(old_path).stem
        if not is_method and head == stem:
            return "likely"
        if same_file or imports_it:
            return "likely"
        return None

    def _imports(self, src_file: int, old_path: str, name: str) -> int:
        """Whether a file imports the file at old_path: 2 it imports `name` from it, 1 it imports
        the module, 0 no (resolved edges, else the module text)."""
        key = (src_file, old_path, name)
        if key not in self._imports_cache:
            self._imports_cache[key] = self._imports_uncached(src_file, old_path, name)
        return self._imports_cache[key]

    def _imports_uncached(self, src_file: int, old_path: str, name: str) -> int:
        p = PurePosixPath(old_path)
        target = "/".join([*p.parent.parts, p.stem])
        best = 0
        for module, names, dst, dst_path in review.imports_of(self.db, src_file):
            hit = dst is not None and dst_path == old_path
            mod = re.sub(r"::|[./\\]+", "/", str(module).strip("\"'<>")).strip("/")
            if not hit and mod:
                hit = target.endswith(mod) or mod.endswith(target) or mod.split("/")[-1] == p.stem
            imported = [n.strip() for n in str(names or "").split(",") if n.strip()]
            if not hit and p.stem in imported:
                hit = True  # `from pkg import cart`
            if hit:
                best = max(best, 2 if name in imported or "*" in imported else 1)
        return best

    # ------------------------------------------------------------------ call sites
    def _mismatches(self, ctx: ChangeContext) -> None:
        change = ctx.change
        new = change.new
        if new is None or not ctx.callers:
            return
        pf = self.files.get(change.path)
        if pf is not None and pf.new is not None and sum(
            1 for u in pf.new.units if u.qualname == new.qualname and u.kind == new.kind
        ) > 1:
            return  # overloads: the call may bind to another one
        owner = new.scope[-1] if new.scope else ""
        for ref in ctx.callers:
            tree = self._tree(ref.path)
            if tree is None:
                continue
            root, data = tree
            names = [new.name]
            if new.name in ("__init__", "constructor") and owner:
                names = [owner, new.name]
            found = []
            for name in names:
                for args in call_args_at(root, data, ref.line, name):
                    found.append((name, args))
            if not found:
                continue
            issues = []
            for name, args in found:
                receiver = self._receiver_at(ref, name)
                drop = not (owner and receiver == owner and name == new.name)
                spec = param_spec(new, change.language, drop_receiver=drop)
                if spec is None:
                    return
                reason = mismatch(spec, args)
                if reason is None:
                    break  # one call on the line fits: not a clear mismatch
                issues.append(reason)
            else:
                if issues:
                    ctx.mismatched.append(CallIssue(ref, issues[0]))

    def _receiver_at(self, ref: Ref, name: str) -> str:
        return review.receiver_at(self.db, ref.unit_id, ref.line, name)

    # ------------------------------------------------------------------ level 2 and 3
    def _parsed(self, change: UnitChange) -> ParsedFile | None:
        if change.new is not None:
            fs = self.files.get(change.path)
            return fs.new if fs is not None else None
        fs = self.old_files.get(change.old_path or change.path)
        return fs.old if fs is not None else None

    def _outline(self, ctx: ChangeContext) -> None:
        change = ctx.change
        pf = self._parsed(change)
        if pf is None:
            return
        u = change.unit
        marked = self.marked.get((pf.path, change.new is not None), set()) | {u.qualname}
        parent = pf.units[u.parent] if u.parent is not None else pf.units[0]
        if parent.index != 0 and parent.kind in CLASS_LIKE:
            members = [c for c in pf.units if c.parent == parent.index]
            head = parent.signature or f"{parent.kind} {parent.name}"
            lines = [f"{head}  # {parent.start_line}-{parent.end_line}"]
            for c in members:
                mark = "*" if c.qualname in marked else " "
                lines.append(f"  {mark} {c.signature or c.name}  # {c.start_line}-{c.end_line}")
            start, end = parent.start_line, parent.end_line
        else:
            top = [c for c in pf.units if c.parent == 0]
            if len(top) <= 1:
                return
            lines = [f"module {pf.path}"]
            for c in top:
                mark = "*" if c.qualname in marked else " "
                lines.append(f"  {mark} {c.signature or c.kind + ' ' + c.name}  # {c.start_line}-{c.end_line}")
            start, end = 1, pf.lines
        ctx.outline = "\n".join(lines)
        ctx.outline_range = (pf.path, start, end)

    def _metadata(self, ctx: ChangeContext) -> None:
        change = ctx.change
        pf = self._parsed(change)
        if pf is not None:
            for imp in pf.imports:
                text = imp.module + (f" ({', '.join(imp.names)})" if imp.names else "")
                if text and text not in ctx.imports:
                    ctx.imports.append(text)
        words = set(_IDENT_RE.findall(change.code))
        consts: dict[str, str] = {}
        if pf is not None:
            for u in pf.units:
                if u.kind == "constant" and u.name in words:
                    consts[u.name] = f"{u.name} ({pf.path}:{u.start_line})"
        candidates = sorted(w for w in words if w not in consts and len(w) > 1 and w.upper() == w
                            and any(ch.isalpha() for ch in w))
        for name, path, line in review.constants_named(self.db, candidates):
            consts.setdefault(name, f"{name} ({path}:{line})")
        ctx.constants = [consts[k] for k in sorted(consts)]
