"""Which functions, methods and classes a diff changes, from an AST of both sides.

Both sides of each changed file are parsed with `parse_source`; the diff's hunks are mapped
onto the units by line range, and every candidate is confirmed by comparing its code:

- added / deleted: a unit only on one side;
- modified: same qualified name on both sides, different code;
- signature-changed: same name, different parameters (or return type);
- renamed: a deleted and an added unit with the same code under a new name, or the same
  parameters and similar code, or highly similar code (moves to another class or file too).

Methods of an added or deleted class are folded into that class (`members`); units nested in
a changed function are part of its change. A class is "modified" only when its own lines
(not those of its methods) changed.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from dataclasses import dataclass

from coderag_tui.parsing.kinds import CLASS_LIKE, FUNCTION_LIKE
from coderag_tui.parsing.records import ParsedFile, ParsedUnit
from coderag_tui.review.diff import FileDiff

ADDED, MODIFIED, DELETED, RENAMED, SIGNATURE = (
    "added", "modified", "deleted", "renamed", "signature-changed")
KINDS = (SIGNATURE, RENAMED, DELETED, MODIFIED, ADDED)  # the order of the report
INTERESTING = FUNCTION_LIKE | CLASS_LIKE | {"function", "method", "constructor"}
_TOKEN_RE = re.compile(r"[A-Za-z_$][\w$]*|\d[\w.]*|\S")
_WS_RE = re.compile(r"\s+")
RENAME_SIMILARITY = 0.75  # code this similar under another name is a rename
RENAME_SAME_PARAMS = 0.5  # ... or this similar with the very same parameters
MAX_PAIRS = 4000  # candidate pairs scored by similarity before only exact matches count


@dataclass(frozen=True)
class FileSides:
    """A changed file with both sides' text and parse (None where a side does not exist)."""

    diff: FileDiff
    language: str
    old_text: str | None
    new_text: str | None
    old: ParsedFile | None
    new: ParsedFile | None
    partial: bool = False  # a side was rebuilt from the hunks alone (best effort)
    note: str = ""  # why the file has no units (binary, unknown language, too large, ...)


@dataclass(frozen=True)
class UnitChange:
    kind: str  # added, modified, deleted, renamed, signature-changed
    path: str  # where the unit is now (where it was, for a deleted unit)
    old_path: str | None
    new: ParsedUnit | None
    old: ParsedUnit | None
    new_code: str
    old_code: str
    language: str
    similarity: float = 1.0  # renamed: how alike the old and new code are
    members: tuple[str, ...] = ()  # added/deleted class: its methods
    partial: bool = False

    @property
    def unit(self) -> ParsedUnit:
        u = self.new or self.old
        assert u is not None
        return u

    @property
    def name(self) -> str:
        return self.unit.name

    @property
    def qualname(self) -> str:
        return self.unit.qualname

    @property
    def old_qualname(self) -> str:
        return self.old.qualname if self.old is not None else ""

    @property
    def start_line(self) -> int:
        return self.unit.start_line

    @property
    def end_line(self) -> int:
        return self.unit.end_line

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def old_citation(self) -> str:
        if self.old is None:
            return ""
        return f"{self.old_path or self.path}:{self.old.start_line}-{self.old.end_line}"

    @property
    def signature_changed(self) -> bool:
        return (self.old is not None and self.new is not None
                and signature_key(self.old) != signature_key(self.new))

    @property
    def code(self) -> str:
        return self.new_code if self.new is not None else self.old_code

    @property
    def moved(self) -> bool:
        return (self.kind == RENAMED and self.old is not None and self.new is not None
                and (self.old.name == self.new.name or (self.old_path or self.path) != self.path))


def unit_code(text: str | None, u: ParsedUnit) -> str:
    if not text:
        return ""
    return "\n".join(text.splitlines()[u.start_line - 1 : u.end_line])


def _norm(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def signature_key(u: ParsedUnit) -> tuple[tuple[str, ...], str]:
    return tuple(_norm(p) for p in u.params), _norm(u.return_type)


def _group(kind: str) -> str:
    return "type" if kind in CLASS_LIKE else "callable"


def _interesting(pf: ParsedFile | None) -> list[ParsedUnit]:
    if pf is None:
        return []
    return [u for u in pf.units if u.index != 0 and u.kind in INTERESTING]


def _own_lines(pf: ParsedFile, u: ParsedUnit) -> set[int]:
    """A unit's lines minus those of the functions and classes nested in it."""
    lines = set(range(u.start_line, u.end_line + 1))
    for c in pf.units:
        if c.index != u.index and c.kind in INTERESTING and _is_inside(pf, c, u):
            lines -= set(range(c.start_line, c.end_line + 1))
    return lines


def _is_inside(pf: ParsedFile, child: ParsedUnit, ancestor: ParsedUnit) -> bool:
    p = child.parent
    while p is not None:
        if p == ancestor.index:
            return True
        p = pf.units[p].parent
    return False


def _own_text(pf: ParsedFile, text: str | None, u: ParsedUnit) -> str:
    if not text:
        return ""
    lines = text.splitlines()
    own = sorted(_own_lines(pf, u))
    return "\n".join(lines[i - 1] for i in own if 0 < i <= len(lines))


def _shape(u: ParsedUnit, code: str) -> list[str]:
    """The code's tokens with the unit's own name blanked out (so a rename compares equal)."""
    return ["\0" if t == u.name else t for t in _TOKEN_RE.findall(code)]


def _params_without_receiver(u: ParsedUnit) -> tuple[str, ...]:
    params = tuple(_norm(p) for p in u.params)
    if params and params[0].split(":")[0].strip("&* ").replace("mut ", "") in ("self", "cls", "this"):
        params = params[1:]
    return params


def _rename_score(old: ParsedUnit, old_code: str, new: ParsedUnit, new_code: str) -> float:
    """How surely `new` is `old` renamed or moved: 0 (no) to 1 (the same code)."""
    if _group(old.kind) != _group(new.kind):
        return 0.0
    a, b = _shape(old, old_code), _shape(new, new_code)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    same_params = _params_without_receiver(old) == _params_without_receiver(new)
    if ratio >= RENAME_SIMILARITY:
        return ratio
    if same_params and old.scope == new.scope and ratio >= RENAME_SAME_PARAMS:
        return ratio
    return 0.0


@dataclass
class _Side:
    path: str
    old_path: str | None
    language: str
    unit: ParsedUnit
    code: str
    pf: ParsedFile
    partial: bool


def classify(files: list[FileSides]) -> list[UnitChange]:
    """The unit changes of a whole diff (renames are found across files too)."""
    changes: list[UnitChange] = []
    removed: list[_Side] = []
    added: list[_Side] = []
    for fs in files:
        file_changes, file_removed, file_added = _classify_file(fs)
        changes.extend(file_changes)
        removed.extend(file_removed)
        added.extend(file_added)

    # renames: best-scoring pairs first, each unit used once
    scored: list[tuple[float, int, int]] = []
    exact_only = len(removed) * len(added) > MAX_PAIRS
    for i, r in enumerate(removed):
        for j, a in enumerate(added):
            if r.unit.name == a.unit.name and r.unit.scope == a.unit.scope and r.path == a.path:
                continue  # same name and place: not a rename (a re-ordered overload)
            if exact_only and _shape(r.unit, r.code) != _shape(a.unit, a.code):
                continue
            score = _rename_score(r.unit, r.code, a.unit, a.code)
            if score > 0:
                scored.append((score, i, j))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    used_r: set[int] = set()
    used_a: set[int] = set()
    for score, i, j in scored:
        if i in used_r or j in used_a:
            continue
        used_r.add(i)
        used_a.add(j)
        r, a = removed[i], added[j]
        changes.append(UnitChange(RENAMED, a.path, r.path, a.unit, r.unit, a.code, r.code,
                                  a.language, round(score, 3), partial=r.partial or a.partial))
    for i, r in enumerate(removed):
        if i not in used_r:
            changes.append(UnitChange(DELETED, r.path, r.path, None, r.unit, "", r.code, r.language,
                                      members=_members(r.pf, r.unit), partial=r.partial))
    for j, a in enumerate(added):
        if j not in used_a:
            changes.append(UnitChange(ADDED, a.path, a.old_path, a.unit, None, a.code, "", a.language,
                                      members=_members(a.pf, a.unit), partial=a.partial))
    changes = _fold(changes, files)
    order = {k: n for n, k in enumerate(KINDS)}
    changes.sort(key=lambda c: (order.get(c.kind, 9), c.path, c.start_line))
    return changes


def _members(pf: ParsedFile, u: ParsedUnit) -> tuple[str, ...]:
    if u.kind not in CLASS_LIKE:
        return ()
    return tuple(c.name for c in pf.units if c.parent == u.index and c.kind in INTERESTING)


def _classify_file(fs: FileSides) -> tuple[list[UnitChange], list[_Side], list[_Side]]:
    d = fs.diff
    old_changed, new_changed = d.changed_lines()
    old_units = _interesting(fs.old)
    new_units = _interesting(fs.new)
    new_path = d.new_path or d.path
    old_path = d.old_path or d.path

    by_key: dict[tuple[str, str], list[ParsedUnit]] = defaultdict(list)
    for u in old_units:
        by_key[(_group(u.kind), u.qualname)].append(u)
    matched_old: set[int] = set()
    changes: list[UnitChange] = []
    added: list[_Side] = []
    for u in new_units:
        bucket = by_key.get((_group(u.kind), u.qualname))
        if not bucket:
            assert fs.new is not None
            added.append(_Side(new_path, d.old_path, fs.language, u, unit_code(fs.new_text, u),
                               fs.new, fs.partial))
            continue
        o = bucket.pop(0)
        matched_old.add(o.index)
        assert fs.old is not None and fs.new is not None
        own_old = _own_lines(fs.old, o)
        own_new = _own_lines(fs.new, u)
        if not (own_old & old_changed or own_new & new_changed) and d.status != "renamed":
            continue
        before = _own_text(fs.old, fs.old_text, o)
        after = _own_text(fs.new, fs.new_text, u)
        if _norm(before) == _norm(after) and signature_key(o) == signature_key(u):
            continue  # untouched, or whitespace only
        kind = MODIFIED
        if u.kind not in CLASS_LIKE and signature_key(o) != signature_key(u):
            kind = SIGNATURE
        changes.append(UnitChange(kind, new_path, old_path, u, o, unit_code(fs.new_text, u),
                                  unit_code(fs.old_text, o), fs.language, partial=fs.partial))
    removed = [
        _Side(old_path, old_path, fs.language, u, unit_code(fs.old_text, u), fs.old, fs.partial)
        for u in old_units if u.index not in matched_old and fs.old is not None
    ]
    return changes, removed, added


def _fold(changes: list[UnitChange], files: list[FileSides]) -> list[UnitChange]:
    """Drop changes already shown by an enclosing change: methods of an added/deleted class,
    functions nested in a changed function."""
    parsed: dict[tuple[str, bool], ParsedFile] = {}
    for fs in files:
        if fs.new is not None:
            parsed[(fs.diff.new_path or fs.diff.path, True)] = fs.new
        if fs.old is not None:
            parsed[(fs.diff.old_path or fs.diff.path, False)] = fs.old
    reported: dict[tuple[str, bool], dict[int, str]] = defaultdict(dict)
    for c in changes:
        if c.new is not None:
            reported[(c.path, True)][c.new.index] = c.kind
        if c.old is not None:
            reported[(c.old_path or c.path, False)][c.old.index] = c.kind

    def covered(path: str, new: bool, u: ParsedUnit, also: tuple[str, ...] = ()) -> bool:
        pf = parsed.get((path, new))
        if pf is None:
            return False
        seen = reported[(path, new)]
        p = u.parent
        while p is not None and p != 0:
            parent = pf.units[p]
            kind = seen.get(p)
            if kind is not None:
                if parent.kind in FUNCTION_LIKE:
                    return True  # nested in a changed function
                if kind in (ADDED, DELETED) + also:
                    return True  # a member of an added or deleted (or renamed) class
            p = parent.parent
        return False

    out = []
    for c in changes:
        if c.kind == ADDED and c.new is not None and covered(c.path, True, c.new):
            continue
        if c.kind == DELETED and c.old is not None and covered(c.old_path or c.path, False, c.old):
            continue
        if c.kind in (MODIFIED, SIGNATURE, RENAMED) and c.new is not None and covered(c.path, True, c.new):
            continue
        if (c.kind == RENAMED and c.new is not None and c.old is not None and c.old.name == c.new.name
                and c.similarity >= 0.999 and covered(c.path, True, c.new, (RENAMED,))):
            continue  # moved, unchanged, along with its renamed class
        out.append(c)
    return out
