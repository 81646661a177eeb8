"""Profiles: what each file and unit is, from the structural index alone (no model).

A file's role (entry point, core module, utility, types, config, test, docs or plain module),
its connectivity in the reference graph (how many files refer to it, how many it refers to),
its main classes and functions, imports, importers and docstring's first sentence; a unit's
role, signature, callers and docstring's first sentence. Written in the graph's transaction, so
they are there as soon as the structural index is, and rewritten for changed files and their
neighbours (whose importer and caller lists changed with them).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from coderag_tui.parsing.kinds import is_test_path
from coderag_tui.parsing.languages import is_prose
from coderag_tui.store import descriptions as store
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.descriptions import UnitRow

ROLES = ("entry point", "core module", "utility", "types", "config", "test", "docs", "module")
# the order a context or a summary budget prefers them in (entry points first, tests last)
IMPORTANCE = {"entry point": 6, "core module": 5, "types": 4, "module": 3, "utility": 2, "config": 1,
              "docs": 0, "test": 0}
CONFIG_LANGUAGES = frozenset({"yaml", "toml", "json", "ini", "xml", "properties", "dockerfile", "make", "hcl"})
_CONFIG_STEMS = re.compile(r"^(settings|config|configuration|conf|setup|pyproject|package|tsconfig)$|config$", re.I)
_ENTRY_NAMES = frozenset({"__main__.py", "main.py", "cli.py", "app.py", "server.py", "manage.py", "wsgi.py",
                          "asgi.py", "index.ts", "main.ts", "app.ts", "server.ts", "index.js", "main.js",
                          "app.js", "server.js", "main.go", "main.rs", "main.c", "main.cpp", "Main.java"})
_TYPES_STEMS = frozenset({"types", "typing", "typings", "models", "schema", "schemas", "interfaces",
                          "protocols", "constants", "enums", "dtypes", "structs"})
_UTIL = re.compile(r"util|helper|common|compat|misc|tools?$|_internal", re.I)
CORE_MIN_FAN_IN = 3
CORE_SHARE = 0.1  # the best-connected tenth of the files (at least CORE_MIN_FAN_IN importers)
MAIN_NAMES = 8  # classes and functions named in a file's profile
CALLERS_LISTED = 5
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.S)


_WORDS = re.compile(r"[^\W\d_]{2,}")


def first_sentence(doc: str, limit: int = 200) -> str:
    """The first sentence of a docstring; "" for a shebang, an encoding line or a rule of
    dashes (a file's leading comment is read as its docstring), which are not prose."""
    text = " ".join(doc.split())
    if text.startswith(("!", "-*-", "vim:")) or len(_WORDS.findall(text)) < 2:
        return ""
    m = _SENTENCE.match(text)
    out = m.group(1) if m else text
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"


def file_role(path: str, language: str, units: Sequence[UnitRow], fan_in: int, core_at: int) -> str:
    p = PurePosixPath(path)
    stem = p.stem.lower()
    if is_test_path(path) or (units and all(u.is_test for u in units if u.kind != "file") and
                              any(u.kind != "file" for u in units)):
        return "test"
    if language.lower() in CONFIG_LANGUAGES or _CONFIG_STEMS.search(stem):
        return "config"
    if is_prose(language):
        return "docs"
    top = [u for u in units if u.kind != "file" and (u.parent_id is None or u.parent_id == units[0].id)]
    if p.name in _ENTRY_NAMES or any(u.name == "main" and u.kind == "function" for u in top):
        return "entry point"
    if stem in _TYPES_STEMS or path.endswith(".d.ts") or (
            top and all(u.kind in ("class", "interface", "struct", "enum", "type") for u in top) and
            not any(u.kind == "method" for u in units) and fan_in > 0):
        return "types"
    if fan_in >= core_at:
        return "core module"
    if _UTIL.search(stem) or any(_UTIL.search(part) for part in p.parts[:-1]):
        return "utility"
    return "module"


def core_threshold(fan_ins: Sequence[int]) -> int:
    return threshold_of(Counter(fan_ins))


def threshold_of(counts: Mapping[int, int]) -> int:
    """`core_threshold` of the fan-ins these counts hold (fan-in -> how many files have it)."""
    n = sum(counts.values())
    if not n:
        return CORE_MIN_FAN_IN
    rank = min(n - 1, int(n * CORE_SHARE))  # the rank-th best connected file, counted from 0
    for fan_in in sorted(counts, reverse=True):
        rank -= counts[fan_in]
        if rank < 0:
            return max(CORE_MIN_FAN_IN, fan_in)
    raise AssertionError("unreachable")


# meta: how many files have each fan-in ([[fan-in, files], ...]): the core threshold of every
# file's fan-in, kept in step with the profiles so an update needs no pass over all of them
FAN_INS_META = "file_fan_ins"


def refresh_profiles(db: StoreBackend, changed_files: Collection[int] | None, also: Collection[int] = ()) -> int:
    """Recompute the profiles of the changed files, their neighbours and the files in `also`
    (None: of every file), leaving what a full pass would: a file whose role moves with the core
    threshold is rewritten too. Only the rows that differ are written. Call inside the graph's
    transaction. Returns how many profiles were written."""
    known = store.all_file_ids(db)
    if changed_files is None:
        file_ids = known
    else:
        present = set(known)
        wanted = {f for f in changed_files if f in present}
        wanted |= store.neighbour_files(db, sorted(wanted)) if wanted else set()
        file_ids = sorted(f for f in wanted | set(also) if f in present)
    part = _Part.load(db, file_ids)
    if changed_files is None:
        counts = Counter(part.fan_in.get(f, 0) for f in file_ids)
        core_at = threshold_of(counts)
        rows, keywords = part.rows(db, core_at)
        store.replace_profiles(db, rows)
        _with_summaries(db, part.units, keywords)
        store.write_keyword_rows(db, keywords)
        _save_counts(db, counts)
        return len(rows)
    before, counts = _fan_in_counts(db, part, len(known))
    core_at = threshold_of(counts)
    old_at = threshold_of(before)
    if old_at != core_at:  # files whose fan-in lies between the two thresholds change role
        moved = store.files_with_fan_in(db, min(old_at, core_at), max(old_at, core_at))
        extra = sorted(set(moved) - set(file_ids))
        if extra:
            part.add(_Part.load(db, extra))
    rows, keywords = part.rows(db, core_at)
    changed_rows = [r for r in rows if part.stored.get(r[0]) != r]
    new_ids = {r[0] for r in rows}
    gone = sorted(uid for uid in part.stored if uid not in new_ids)
    store.write_profile_changes(db, gone, changed_rows)
    changed_ids = {r[0] for r in changed_rows}
    keywords = {uid: text for uid, text in keywords.items() if uid in changed_ids}
    _with_summaries(db, [u for u in part.units if u.id in changed_ids], keywords)
    store.write_keyword_rows(db, keywords)
    _save_counts(db, counts)
    return len(changed_rows)


def _fan_in_counts(db: StoreBackend, part: _Part, files: int) -> tuple[Counter[int], Counter[int]]:
    """(the fan-in counts of the stored profiles, those with these files' new fan-ins): from the
    counts kept in meta, or, when they are missing or do not add up to every file, from every
    stored file profile."""
    heads = {u.file_id: u.id for u in part.units if u.kind == "file"}
    stored: Counter[int] = Counter()
    try:
        stored.update({int(k): int(v) for k, v in json.loads(db.get_meta(FAN_INS_META) or "x")})
    except (ValueError, TypeError):
        stored.clear()
    after = stored.copy()
    for fid, head in heads.items():
        old = part.stored.get(head)
        if old is not None:
            after[old[3]] -= 1
        after[part.fan_in.get(fid, 0)] += 1
    if not stored or sum(after.values()) != files or any(v < 0 for v in after.values()):
        every = store.stored_file_fan_ins(db)
        stored = Counter(every.values())
        after = Counter(n for fid, n in every.items() if fid not in heads)
        after.update(part.fan_in.get(f, 0) for f in heads)
    return stored, +after


def _save_counts(db: StoreBackend, counts: Counter[int]) -> None:
    db.set_meta(FAN_INS_META, json.dumps(sorted([k, v] for k, v in counts.items() if v > 0)))


@dataclass
class _Part:
    """What the profiles of some files are made from, as stored now."""

    file_ids: list[int]
    units: list[UnitRow]
    fan_in: dict[int, int]
    fan_out: dict[int, int]
    stored: dict[int, store.ProfileRow]

    @classmethod
    def load(cls, db: StoreBackend, file_ids: list[int]) -> _Part:
        fan_in, fan_out = store.file_degrees(db, file_ids)
        return cls(list(file_ids), store.units_of(db, file_ids), fan_in, fan_out, store.stored_profiles(db, file_ids))

    def add(self, other: _Part) -> None:
        self.file_ids += other.file_ids
        self.units += other.units
        self.fan_in.update(other.fan_in)
        self.fan_out.update(other.fan_out)
        self.stored.update(other.stored)

    def rows(self, db: StoreBackend, core_at: int) -> tuple[list[store.ProfileRow], dict[int, str]]:
        """Every profile row of these files' units, and the files' keyword texts."""
        file_ids, units, fan_in, fan_out = self.file_ids, self.units, self.fan_in, self.fan_out
        imports = store.imports_of(db, file_ids)
        importers = store.importer_paths(db, file_ids)
        callers = store.callers(db, [u.id for u in units])
        callees = store.callee_counts(db, file_ids)
        lines = store.file_lines(db, file_ids)
        by_file: dict[int, list[UnitRow]] = {}
        for u in units:
            by_file.setdefault(u.file_id, []).append(u)
        rows: list[store.ProfileRow] = []
        keywords: dict[int, str] = {}
        for fid, members in by_file.items():
            members.sort(key=lambda u: (u.kind != "file", u.start_line, u.id))
            head = members[0]
            role = file_role(head.path, head.language, members, fan_in.get(fid, 0), core_at)
            main = [u for u in members if u.kind != "file" and u.parent_id in (None, head.id)]
            main.sort(key=lambda u: (-len(callers.get(u.id, ())), u.start_line))
            data: dict[str, object] = {
                "path": head.path, "language": head.language, "lines": lines.get(fid, 0), "role": role,
                "fan_in": fan_in.get(fid, 0), "fan_out": fan_out.get(fid, 0),
                "main": [f"{u.kind} {u.qualname}" for u in main[:MAIN_NAMES]],
                "imports": list(dict.fromkeys(imports.get(fid, [])))[:30],
                "imported_by": importers.get(fid, [])[:30],
                "doc": first_sentence(head.docstring) if head.docstring else "",
            }
            text = file_profile_text(data)
            rows.append((head.id, fid, role, fan_in.get(fid, 0), fan_out.get(fid, 0), json.dumps(data), text))
            keywords[head.id] = keyword_text(data)
            for u in members[1:]:
                urole = "test" if u.is_test else ("entry point" if u.name == "main" else role)
                called_by = callers.get(u.id, [])
                udata: dict[str, object] = {"kind": u.kind, "qualname": u.qualname, "signature": u.signature,
                                            "role": urole, "callers": called_by[:CALLERS_LISTED],
                                            "doc": first_sentence(u.docstring) if u.docstring else ""}
                rows.append((u.id, fid, urole, len(called_by), callees.get(u.id, 0), json.dumps(udata),
                             unit_profile_text(udata, len(called_by), callees.get(u.id, 0))))
        return rows, keywords


def _with_summaries(db: StoreBackend, units: Sequence[UnitRow], keywords: dict[int, str]) -> None:
    """Add the stored summaries' words (of every model) when summaries join the ranking."""
    if not store.summaries_searched(db):
        return
    keys = {store.summary_key(u.path, u.kind, u.qualname): u.id for u in units}
    for key, s in store.summaries_by_key(db, list(keys)).items():
        uid = keys[key]
        keywords[uid] = (keywords.get(uid, "") + "\n" + s.text).strip()


def file_profile_text(d: dict[str, object]) -> str:
    parts = [f"{d['path']}: {d['role']} ({d['language']}, {d['lines']} lines; "
             f"referred to by {d['fan_in']} files, refers to {d['fan_out']})."]
    if d.get("doc"):
        parts.append(str(d["doc"]))
    for label, key in (("Defines", "main"), ("Imports", "imports"), ("Imported by", "imported_by")):
        items = d.get(key) or []
        if isinstance(items, list) and items:
            parts.append(f"{label}: {', '.join(map(str, items[:10]))}" + (" …" if len(items) > 10 else "") + ".")
    return " ".join(parts)


def keyword_text(d: dict[str, object]) -> str:
    """The words a file's profile adds to search: its docstring's first sentence. (Names,
    imports and paths are in the chunks' keyword rows already, and role words such as "module"
    or "test" matched questions at random: measured, they cost a query of 184 at Acc@1.)"""
    return str(d.get("doc") or "")


def unit_profile_text(d: dict[str, object], fan_in: int, fan_out: int) -> str:
    parts = [f"{d['kind']} {d['qualname']} ({d['role']}; called from {fan_in} places, calls {fan_out})."]
    if d.get("signature"):
        parts.append(f"Signature: {d['signature']}.")
    if d.get("doc"):
        parts.append(str(d["doc"]))
    callers = d.get("callers") or []
    if isinstance(callers, list) and callers:
        parts.append("Called by: " + ", ".join(map(str, callers)) + ".")
    return " ".join(parts)


def apply_summary_search(db: StoreBackend, on: bool) -> bool:
    """Put the summaries' words in the keyword rows, or take them out, to follow `[summaries]
    search`; returns whether anything changed (the embedded documents follow at the next embed)."""
    value = "1" if on else "0"
    if db.get_meta(store.SEARCH_META) == value:
        return False
    with db.transaction():
        db.set_meta(store.SEARCH_META, value)
        if store.profile_count(db):
            refresh_profiles(db, None)
    return True


def describe_changes(db: StoreBackend, changed_files: Collection[int] | None, also: Collection[int] = ()) -> None:
    """After the graph is resolved: rewrite the profiles (of the changed files, their neighbours
    and the files in `also`), then mark the model summaries that the change made stale (call
    inside the graph's transaction)."""
    refresh_profiles(db, changed_files, also)
    invalidate_summaries(db, changed_files)


def invalidate_summaries(db: StoreBackend, changed_files: Collection[int] | None) -> int:
    """Mark stale the summaries of changed units' parents, callers and importers (what
    summarized them); a changed unit's own summary no longer matches its code hash. Summaries
    of units that are gone are dropped. Returns how many were marked."""
    if not store.has_summaries(db):
        return 0
    store.drop_orphan_summaries(db)
    files = store.all_file_ids(db) if changed_files is None else sorted(changed_files)
    units = store.units_of(db, files)
    keyed = {store.summary_key(u.path, u.kind, u.qualname): u for u in units}
    stored = store.summaries_by_key(db, list(keyed))
    store.drop_summaries_except(db, sorted({u.path for u in units}), set(keyed))
    hashes = store.code_hashes(db, [keyed[k] for k in stored])
    changed = [keyed[k] for k, s in stored.items() if s.code_hash != hashes[keyed[k].id]]
    if not changed:
        return 0
    by_id = {u.id: u for u in units}
    affected: set[int] = set()
    for u in changed:  # parents up to the file
        p = u.parent_id
        while p is not None and p in by_id:
            affected.add(p)
            p = by_id[p].parent_id
    affected |= store.caller_ids(db, [u.id for u in changed])
    changed_files_ids = sorted({u.file_id for u in changed})
    affected |= store.importer_file_units(db, changed_files_ids)
    rows = store.units_by_id(db, sorted(affected))
    keys = [store.summary_key(u.path, u.kind, u.qualname) for u in rows.values()]
    keys += [store.summary_key(u.path, u.kind, u.qualname) for u in changed]
    keys += [store.summary_key(folder, "folder", folder) for folder in {folder_of(u.path) for u in changed}]
    return store.mark_stale(db, keys)


def folder_of(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "" if parent == "." else parent
