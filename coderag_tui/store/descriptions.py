"""The SQL of descriptions: profiles (from the graph), model summaries and their keyword rows.

The keyword rows of descriptions (the backend's: `description_search`) have one row per unit
holding the unit's profile text (files only: a unit's own words are already in the chunks'
keyword rows) and its summary, if any.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.sql import matchable

SEP = "\x1f"
REF_KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS")


SEARCH_META = "summaries_in_search"  # '1' when summary words are in the keyword rows and documents


def summaries_searched(db: StoreBackend) -> bool:
    """Whether the model's summaries join the ranking (see `[summaries] search`)."""
    return db.get_meta(SEARCH_META) == "1"


def summary_key(path: str, kind: str, qualname: str) -> str:
    """The key of a unit's summary: stable across re-indexing, unlike its unit id."""
    return f"{path}{SEP}{kind}{SEP}{qualname}"


@dataclass(frozen=True)
class UnitRow:
    id: int
    file_id: int
    parent_id: int | None
    kind: str
    name: str
    qualname: str
    signature: str
    docstring: str
    start_line: int
    end_line: int
    is_test: bool
    path: str
    language: str


_UNIT_COLS = ("u.id, u.file_id, u.parent_id, u.kind, u.name, u.qualname, u.signature, u.docstring, "
              "u.start_line, u.end_line, u.is_test, f.path, f.language")


def _unit(r: Sequence[Any]) -> UnitRow:
    return UnitRow(int(r[0]), int(r[1]), None if r[2] is None else int(r[2]), str(r[3]), str(r[4]), str(r[5]),
                   str(r[6] or ""), str(r[7] or ""), int(r[8]), int(r[9]), bool(r[10]), str(r[11]), str(r[12]))


def all_file_ids(db: StoreBackend) -> list[int]:
    return [int(r[0]) for r in db.execute("SELECT id FROM files ORDER BY id")]


def file_ids_under(db: StoreBackend, paths: Sequence[str]) -> list[int]:
    """The files at or under `paths` (files or folders; "" or "." is everything)."""
    wanted = [p.strip("/") for p in paths]
    if any(not p or p == "." for p in wanted):
        return all_file_ids(db)
    ids: set[int] = set()
    for p in wanted:
        if not matchable(p):
            continue
        like = p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
        ids.update(int(r[0]) for r in db.execute(
            f"SELECT id FROM files WHERE path=? OR path {db.like} ? ESCAPE '\\'", (p, like)))
    return sorted(ids)


def units_of(db: StoreBackend, file_ids: Sequence[int]) -> list[UnitRow]:
    return [_unit(r) for r in db.rows_in(
        f"SELECT {_UNIT_COLS} FROM units u JOIN files f ON f.id=u.file_id WHERE u.file_id IN ({{marks}}) "
        "ORDER BY u.file_id, u.start_line, u.id", list(file_ids))]


def units_by_id(db: StoreBackend, ids: Sequence[int]) -> dict[int, UnitRow]:
    return {int(r[0]): _unit(r) for r in db.rows_in(
        f"SELECT {_UNIT_COLS} FROM units u JOIN files f ON f.id=u.file_id WHERE u.id IN ({{marks}})", list(ids))}


def file_lines(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, int]:
    return {int(a): int(b) for a, b in db.rows_in("SELECT id, lines FROM files WHERE id IN ({marks})", list(file_ids))}


def neighbour_files(db: StoreBackend, file_ids: Sequence[int]) -> set[int]:
    """Files that refer to, or are referred to by, the given files (their profiles list them)."""
    marks_kinds = ",".join("?" * len(REF_KINDS))
    out: set[int] = set()
    out.update(int(r[0]) for r in db.rows_in(
        f"SELECT DISTINCT e.src_file FROM edges e JOIN units t ON t.id=e.dst WHERE t.file_id IN ({{marks}}) "
        f"AND e.kind IN ({marks_kinds})", list(file_ids), REF_KINDS))
    out.update(int(r[0]) for r in db.rows_in(
        f"SELECT DISTINCT t.file_id FROM edges e JOIN units t ON t.id=e.dst WHERE e.src_file IN ({{marks}}) "
        f"AND e.kind IN ({marks_kinds})", list(file_ids), REF_KINDS))
    return out


def callers(db: StoreBackend, unit_ids: Sequence[int]) -> dict[int, list[str]]:
    """Unit id -> the qualified names of the units that call it (distinct)."""
    out: dict[int, list[str]] = {}
    # each caller's name read by its id: as a join, PostgreSQL expects every unit to have dozens
    # of callers and hashes the whole units table (0.2 s per call at 500,000 chunks)
    for dst, qual in db.rows_in(
            "SELECT DISTINCT e.dst, (SELECT s.qualname FROM units s WHERE s.id=e.src) FROM edges e "
            "WHERE e.kind='CALLS' AND e.dst IN ({marks}) ORDER BY 1, 2", list(unit_ids)):
        if qual is not None:
            out.setdefault(int(dst), []).append(str(qual))
    return out


def caller_ids(db: StoreBackend, unit_ids: Sequence[int]) -> set[int]:
    return {int(r[0]) for r in db.rows_in(
        "SELECT DISTINCT src FROM edges WHERE kind='CALLS' AND dst IN ({marks})", list(unit_ids))}


def callee_counts(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, int]:
    return {int(s): int(n) for s, n in db.rows_in(
        "SELECT src, count(DISTINCT dst) FROM edges WHERE kind='CALLS' AND dst IS NOT NULL "
        "AND src_file IN ({marks}) GROUP BY src", list(file_ids))}


def imports_of(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for fid, module in db.rows_in("SELECT file_id, module FROM imports WHERE file_id IN ({marks}) "
                                  "ORDER BY file_id, line", list(file_ids)):
        out.setdefault(int(fid), []).append(str(module))
    return out


def importer_paths(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, list[str]]:
    """File id -> paths of the other files that import it."""
    out: dict[int, list[str]] = {}
    for fid, path in db.rows_in(
            "SELECT DISTINCT t.file_id, sf.path FROM edges e JOIN units t ON t.id=e.dst "
            "JOIN files sf ON sf.id=e.src_file WHERE e.kind='IMPORTS' AND t.file_id IN ({marks}) "
            "AND e.src_file<>t.file_id ORDER BY t.file_id, sf.path", list(file_ids)):
        out.setdefault(int(fid), []).append(str(path))
    return out


def file_degrees(db: StoreBackend, file_ids: Sequence[int]) -> tuple[dict[int, int], dict[int, int]]:
    """(fan-in, fan-out): how many other files refer to each file, and how many it refers to."""
    # two index lookups each, counted here: as one join, PostgreSQL expects dozens of edges per
    # unit and hashes the whole units table (0.4 s per call at 500,000 chunks)
    kinds = ",".join("?" * len(REF_KINDS))
    file_of = {int(u): int(f) for u, f in db.rows_in("SELECT id, file_id FROM units WHERE file_id IN ({marks})",
                                                       list(file_ids))}
    referrers: dict[int, set[int]] = {}
    for dst, src_file in db.rows_in(f"SELECT dst, src_file FROM edges WHERE dst IN ({{marks}}) AND kind IN ({kinds})",
                                    list(file_of), REF_KINDS):
        target = file_of[int(dst)]
        if int(src_file) != target:
            referrers.setdefault(target, set()).add(int(src_file))
    out_edges = db.rows_in(f"SELECT src_file, dst FROM edges WHERE src_file IN ({{marks}}) AND kind IN ({kinds}) "
                           "AND dst IS NOT NULL", list(file_ids), REF_KINDS)
    dst_file = {int(u): int(f) for u, f in db.rows_in("SELECT id, file_id FROM units WHERE id IN ({marks})",
                                                        sorted({int(d) for _, d in out_edges}))}
    referred: dict[int, set[int]] = {}
    for src_file, dst in out_edges:
        to = dst_file.get(int(dst))
        if to is not None and to != int(src_file):
            referred.setdefault(int(src_file), set()).add(to)
    return ({f: len(s) for f, s in referrers.items()}, {f: len(s) for f, s in referred.items()})


def stored_file_fan_ins(db: StoreBackend) -> dict[int, int]:
    """File id -> the fan-in its stored profile holds (a pass over every profile)."""
    return {int(fid): int(n) for fid, n in db.execute(
        "SELECT p.file_id, p.fan_in FROM profiles p JOIN units u ON u.id=p.unit_id WHERE u.kind='file'")}


def files_with_fan_in(db: StoreBackend, low: int, high: int) -> list[int]:
    """The files whose stored profile has a fan-in from `low` up to (not including) `high`."""
    return sorted(int(r[0]) for r in db.execute(
        "SELECT p.file_id FROM profiles p JOIN units u ON u.id=p.unit_id WHERE u.kind='file' "
        "AND p.fan_in>=? AND p.fan_in<?", (low, high)))


def code_hashes(db: StoreBackend, units: Sequence[UnitRow]) -> dict[int, str]:
    """Unit id -> a digest of the unit's signature and lines (read from its file's chunks)."""
    import hashlib

    by_file: dict[int, dict[int, str]] = {}
    for fid, start, text in db.rows_in(
            "SELECT file_id, start_line, text FROM chunks WHERE file_id IN ({marks}) ORDER BY file_id, start_line, id",
            sorted({u.file_id for u in units})):
        lines = by_file.setdefault(int(fid), {})
        for n, line in enumerate(str(text).split("\n"), start=int(start)):
            lines.setdefault(n, line)
    out: dict[int, str] = {}
    for u in units:
        lines = by_file.get(u.file_id, {})
        body = "\n".join(lines.get(n, "") for n in range(u.start_line, u.end_line + 1))
        out[u.id] = hashlib.sha1(f"{u.signature}\n{body}".encode("utf-8", "replace")).hexdigest()[:16]
    return out


# ---------------------------------------------------------------------- profiles
ProfileRow = tuple[int, int, str, int, int, str, str]  # unit id, file id, role, fan-in, fan-out, data, text
_PROFILE_COLS = ("unit_id", "file_id", "role", "fan_in", "fan_out", "data", "text")


def replace_profiles(db: StoreBackend, rows: Sequence[ProfileRow]) -> None:
    """Replace every profile with `rows`, and empty the descriptions' keyword rows (call inside
    a transaction; `write_keyword_rows` writes them)."""
    db.clear_description_rows()
    db.execute("DELETE FROM profiles")
    db.insert_rows("profiles", _PROFILE_COLS, rows)


def stored_profiles(db: StoreBackend, file_ids: Sequence[int]) -> dict[int, ProfileRow]:
    """Unit id -> the stored profile row, of these files' units."""
    return {int(r[0]): (int(r[0]), int(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5]), str(r[6]))
            for r in db.rows_in(f"SELECT {', '.join(_PROFILE_COLS)} FROM profiles WHERE file_id IN ({{marks}})",
                                list(file_ids))}


def write_profile_changes(db: StoreBackend, gone: Sequence[int], rows: Sequence[ProfileRow]) -> None:
    """Delete the profiles of units that are gone and write `rows` in place of the stored rows
    of their units, with their keyword rows (those of `rows` are written by `write_keyword_rows`).
    Call inside a transaction."""
    ids = sorted({*gone, *(r[0] for r in rows)})
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        db.delete_description_rows(part)
        db.execute(f"DELETE FROM profiles WHERE unit_id IN ({','.join('?' * len(part))})", part)
    db.insert_rows("profiles", _PROFILE_COLS, rows)


def write_keyword_rows(db: StoreBackend, texts: dict[int, str]) -> None:
    """Set the keyword rows of these units (an empty text removes the row)."""
    ids = sorted(texts)
    db.delete_description_rows(ids)
    db.insert_description_rows([(uid, texts[uid]) for uid in ids if texts[uid].strip()])


def profile_of(db: StoreBackend, unit_id: int) -> tuple[str, int, int, dict[str, Any], str] | None:
    """(role, fan-in, fan-out, data, text) of a unit's profile."""
    row = db.one("SELECT role, fan_in, fan_out, data, text FROM profiles WHERE unit_id=?", (unit_id,))
    if row is None:
        return None
    try:
        data = json.loads(row[3])
    except ValueError:
        data = {}
    return str(row[0]), int(row[1]), int(row[2]), data, str(row[4])


def profiles_for(db: StoreBackend, unit_ids: Sequence[int]) -> dict[int, tuple[str, int, int, str]]:
    """Unit id -> (role, fan-in, fan-out, text)."""
    return {int(r[0]): (str(r[1]), int(r[2]), int(r[3]), str(r[4])) for r in db.rows_in(
        "SELECT unit_id, role, fan_in, fan_out, text FROM profiles WHERE unit_id IN ({marks})", list(unit_ids))}


def profile_count(db: StoreBackend) -> int:
    return int(db.scalar("SELECT count(*) FROM profiles", default=0))


# ---------------------------------------------------------------------- summaries
@dataclass(frozen=True)
class StoredSummary:
    key: str
    path: str
    kind: str
    qualname: str
    text: str
    model: str
    prompt_version: str
    code_hash: str
    child_hash: str
    stale: bool
    created: float
    seconds: float


_SUM_COLS = "key, path, kind, qualname, text, model, prompt_version, code_hash, child_hash, stale, created, seconds"


def _summary(r: Sequence[Any]) -> StoredSummary:
    return StoredSummary(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), str(r[7]),
                         str(r[8]), bool(r[9]), float(r[10]), float(r[11]))


def summaries_by_key(db: StoreBackend, keys: Sequence[str]) -> dict[str, StoredSummary]:
    return {str(r[0]): _summary(r) for r in db.rows_in(
        f"SELECT {_SUM_COLS} FROM unit_summaries WHERE key IN ({{marks}})", list(keys))}


def summaries_of_paths(db: StoreBackend, paths: Sequence[str]) -> dict[str, StoredSummary]:
    return {str(r[0]): _summary(r) for r in db.rows_in(
        f"SELECT {_SUM_COLS} FROM unit_summaries WHERE path IN ({{marks}})", list(paths))}


def all_summaries(db: StoreBackend) -> list[StoredSummary]:
    return [_summary(r) for r in db.execute(f"SELECT {_SUM_COLS} FROM unit_summaries ORDER BY path, key")]


def put_summary(db: StoreBackend, s: StoredSummary) -> None:
    """Store a unit's summary in place of the one its key had. (Replaced, not upserted: a key
    holds a path without bound, and PostgreSQL keeps such keys unique through their digest, which
    an ON CONFLICT cannot name.)"""
    with db.transaction():
        db.execute("DELETE FROM unit_summaries WHERE key=?", (s.key,))
        db.execute(f"INSERT INTO unit_summaries({_SUM_COLS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                   (s.key, s.path, s.kind, s.qualname, s.text, s.model, s.prompt_version, s.code_hash, s.child_hash,
                    int(s.stale), s.created or time.time(), s.seconds))


def mark_stale(db: StoreBackend, keys: Iterable[str]) -> int:
    keys = sorted(set(keys))
    n = 0
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        n += db.changed(f"UPDATE unit_summaries SET stale=1 WHERE stale=0 AND key IN ({','.join('?' * len(part))})",
                        part)
    return n


def summary_count(db: StoreBackend) -> int:
    return int(db.scalar("SELECT count(*) FROM unit_summaries", default=0))


def has_summaries(db: StoreBackend) -> bool:
    return db.one("SELECT 1 FROM unit_summaries LIMIT 1") is not None


def importer_file_units(db: StoreBackend, file_ids: Sequence[int]) -> set[int]:
    """The file units of the files that import any of these files."""
    return {int(r[0]) for r in db.rows_in(
        "SELECT DISTINCT e.src FROM edges e JOIN units t ON t.id=e.dst WHERE e.kind='IMPORTS' "
        "AND t.file_id IN ({marks}) AND e.src_file<>t.file_id", list(file_ids))}


def drop_orphan_summaries(db: StoreBackend) -> None:
    """Summaries of files that are gone (folders stay: their path is not a file's)."""
    db.execute("DELETE FROM unit_summaries WHERE kind<>'folder' AND path NOT IN (SELECT path FROM files)")


def drop_summaries_except(db: StoreBackend, paths: Sequence[str], keep: set[str]) -> None:
    """Summaries of units of these files that no longer exist."""
    gone = [str(r[0]) for r in db.rows_in("SELECT key FROM unit_summaries WHERE path IN ({marks})", list(paths))
            if str(r[0]) not in keep]
    for i in range(0, len(gone), 500):
        part = gone[i:i + 500]
        db.execute(f"DELETE FROM unit_summaries WHERE key IN ({','.join('?' * len(part))})", part)


def file_descriptions(db: StoreBackend, path: str) -> tuple[str, dict[int, tuple[str, str]]]:
    """A file's profile text and the stored summaries of its units (unit id -> (text, the model
    that wrote it); a stale one is marked so)."""
    file_id = db.scalar("SELECT id FROM files WHERE path=?", (path,))
    if file_id is None:
        return "", {}
    units = units_of(db, [int(file_id)])
    head = next((u for u in units if u.kind == "file"), None)
    profile = ""
    if head is not None:
        profile = str(db.scalar("SELECT text FROM profiles WHERE unit_id=?", (head.id,), default="") or "")
    keyed = {summary_key(u.path, u.kind, u.qualname): u.id for u in units}
    out: dict[int, tuple[str, str]] = {}
    for key, s in summaries_of_paths(db, [path]).items():
        if key in keyed:
            out[keyed[key]] = (s.text + (" (out of date)" if s.stale else ""), s.model)
    return profile, out


def call_pairs(db: StoreBackend) -> list[tuple[int, int]]:
    """(caller, callee) unit ids of every resolved call."""
    return [(int(a), int(b)) for a, b in db.execute(
        "SELECT src, dst FROM edges WHERE kind='CALLS' AND dst IS NOT NULL AND src<>dst")]


def bases_of(db: StoreBackend, unit_id: int) -> list[str]:
    return [str(r[0]) for r in db.execute(
        "SELECT name FROM edges WHERE src=? AND kind IN ('INHERITS','IMPLEMENTS') ORDER BY line", (unit_id,))]


def file_head(db: StoreBackend, path: str) -> tuple[int, int] | None:
    """(file unit id, line count) of the file at `path`."""
    row = db.one("SELECT u.id, f.lines FROM units u JOIN files f ON f.id=u.file_id WHERE f.path=? AND u.kind='file'",
                 (path,))
    return None if row is None else (int(row[0]), int(row[1] or 0))


def importance_rows(db: StoreBackend, unit_ids: Sequence[int]) -> dict[int, tuple[int, str, int]]:
    """Unit id -> (its fan-in, its file's role, its file's fan-in), from the profiles."""
    return {int(r[0]): (int(r[1]), str(r[2]), int(r[3])) for r in db.rows_in(
        "SELECT p.unit_id, p.fan_in, fp.role, fp.fan_in FROM profiles p "
        "JOIN units fu ON fu.file_id=p.file_id AND fu.kind='file' JOIN profiles fp ON fp.unit_id=fu.id "
        "WHERE p.unit_id IN ({marks})", list(unit_ids))}


def summary_texts(db: StoreBackend, units: Iterable[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
    """Unit id -> (its stored summary's text, the model that wrote it), for (id, path, kind,
    qualname) of units."""
    keyed = {summary_key(p, k, q): uid for uid, p, k, q in units}
    if not keyed or not db.has_table("unit_summaries"):
        return {}
    return {keyed[str(k)]: (str(t), str(m)) for k, t, m in db.rows_in(
        "SELECT key, text, model FROM unit_summaries WHERE key IN ({marks})", list(keyed))}
