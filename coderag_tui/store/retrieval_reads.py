"""Reads the retrievers make around their ranked queries: a file's text as its chunks hold it,
a file's content hash, the files a module name denotes, imports by the name written, the units
inside matched chunks, the references and outline rows the repo map ranks, units by name
or path for symbol lookup, the units overlapping a span, a file's imports and constants and a
unit's bases for context metadata, and the state the repo graph is cached by."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from coderag_tui.models import EdgeRef, UnitRef
from coderag_tui.store import descriptions, read
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.read import UNIT_SELECT, unit_from_row
from coderag_tui.store.sql import matchable


def file_hash(db: StoreBackend, path: str) -> str | None:
    """The content hash a file had when it was indexed (None: not indexed)."""
    row = db.one("SELECT hash FROM files WHERE path = ?", (path,))
    return None if row is None else str(row[0])


def module_files(db: StoreBackend, stem: str) -> list[UnitRef]:
    """File units a path stem names: `stem`, `stem.*`, `*/stem.*`, or a package `stem/__init__.*`."""
    if not matchable(stem):
        return []
    return [unit_from_row(row) for row in db.execute(
        UNIT_SELECT + f" WHERE u.kind='file' AND (f.path = ? OR f.path {db.like} ? OR f.path {db.like} ? "
        f"OR f.path {db.like} ? OR f.path {db.like} ?)",
        (stem, stem + ".%", "%/" + stem + ".%", stem + "/__init__.%", "%/" + stem + "/__init__.%"))]


def imports_named(db: StoreBackend, module: str) -> list[tuple[int, str, int]]:
    """(importing unit, module as written, line) of the imports of `module` or a module inside it."""
    if not matchable(module):
        return []
    return [(int(s), str(n), int(ln)) for s, n, ln in db.execute(
        f"SELECT src, name, line FROM edges WHERE kind='IMPORTS' AND (name = ? OR name {db.like} ?) "
        "ORDER BY src_file, line", (module, module + ".%"))]


def chunk_texts(db: StoreBackend, ids: Sequence[int]) -> dict[int, str]:
    """The code of these chunks (without their contextual header)."""
    return {int(cid): str(t) for cid, t in db.rows_in("SELECT id, text FROM chunks WHERE id IN ({marks})", ids)}


def units_inside(db: StoreBackend, spans: Sequence[tuple[int, int, int, int]]) -> list[tuple[Any, ...]]:
    """(span key, unit id, start line, end line, kind) of the units wholly inside each span
    (key, file id, start line, end line), file units aside."""
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(spans), 200):
        batch = spans[i : i + 200]
        values = ",".join(["(?,?,?,?)"] * len(batch))
        params = [x for span in batch for x in span]
        out += db.execute(
            f"WITH m(cid, fid, s, e) AS (VALUES {values}) SELECT m.cid, u.id, u.start_line, u.end_line, u.kind "
            f"FROM m JOIN units u ON u.file_id = m.fid WHERE u.start_line >= m.s AND u.end_line <= m.e "
            f"AND u.kind <> 'file'", params)
    return out


def refine_rows(db: StoreBackend, spans: Sequence[tuple[int, int, int, int, int]]) -> tuple[
        dict[int, str], list[tuple[int, int, int, int, str]], dict[int, tuple[str, str, str, str]]]:
    """What refining matched chunks reads, in one statement per 200 chunks (a round trip to a
    server costs more than these rows): for spans (chunk id, file id, start line, end line,
    owning unit id), the chunks' code, the units wholly inside each span (chunk id, unit id,
    start, end, kind; file units aside) and unit id -> (name, signature, docstring, kind) of
    the owners and of those units."""
    texts: dict[int, str] = {}
    inside: list[tuple[int, int, int, int, str]] = []
    briefs: dict[int, tuple[str, str, str, str]] = {}
    for i in range(0, len(spans), 200):
        batch = spans[i : i + 200]
        values = ",".join(["(?,?,?,?,?)"] * len(batch))
        params = [x for span in batch for x in span]
        for cid, part, uid, start, end, kind, name, sig, doc, text in db.execute(
                f"WITH m(cid, fid, s, e, owner) AS (VALUES {values}) "
                "SELECT m.cid, 0, o.id, o.start_line, o.end_line, o.kind, o.name, o.signature, o.docstring, c.text "
                "FROM m JOIN chunks c ON c.id = m.cid LEFT JOIN units o ON o.id = m.owner "
                "UNION ALL SELECT m.cid, 1, u.id, u.start_line, u.end_line, u.kind, u.name, u.signature, u.docstring, "
                "NULL FROM m JOIN units u ON u.file_id = m.fid WHERE u.start_line >= m.s AND u.end_line <= m.e "
                "AND u.kind <> 'file'", params):
            if part == 0:
                texts[int(cid)] = str(text)
            else:
                inside.append((int(cid), int(uid), int(start), int(end), str(kind)))
            if uid is not None:
                briefs[int(uid)] = (str(name), str(sig), str(doc), str(kind))
    return texts, inside, briefs


def unit_briefs(db: StoreBackend, ids: Sequence[int]) -> dict[int, tuple[str, str, str, str]]:
    """unit id -> (name, signature, docstring, kind)."""
    return {int(uid): (str(name), str(sig), str(doc), str(kind)) for uid, name, sig, doc, kind in db.rows_in(
        "SELECT id, name, signature, docstring, kind FROM units WHERE id IN ({marks})", ids)}


def files_by_path(db: StoreBackend) -> list[tuple[int, str]]:
    """(file id, path) of every file, by path."""
    return [(int(fid), str(p)) for fid, p in db.execute("SELECT id, path FROM files ORDER BY path")]


def references(db: StoreBackend, kinds: Sequence[str]) -> list[tuple[Any, ...]]:
    """(source file, target's file, target unit, how many) of the resolved edges of these kinds,
    grouped by source file and target."""
    marks = ",".join("?" * len(kinds))
    return db.rows(
        f"SELECT e.src_file, u.file_id, e.dst, count(*) FROM edges e JOIN units u ON u.id = e.dst "
        f"WHERE e.kind IN ({marks}) AND e.dst IS NOT NULL GROUP BY e.src_file, u.file_id, e.dst", tuple(kinds))


def outline_rows(db: StoreBackend) -> list[tuple[Any, ...]]:
    """(unit id, file id, parent's kind, kind, name, signature, start line) of every unit but files."""
    return db.rows("SELECT u.id, u.file_id, p.kind, u.kind, u.name, u.signature, u.start_line FROM units u "
                   "LEFT JOIN units p ON p.id = u.parent_id WHERE u.kind <> 'file'")


def files_at(db: StoreBackend, stem: str, limit: int = 200) -> list[UnitRef]:
    """File units at a path, under a folder of that path, or with that path and an extension."""
    if not matchable(stem):
        return []
    return [unit_from_row(r) for r in db.execute(
        UNIT_SELECT + f" WHERE u.kind = 'file' AND (f.path = ? OR f.path {db.like} ? OR f.path {db.like} ?) LIMIT ?",
        (stem, stem + "/%", stem + ".%", limit))]


def units_named(db: StoreBackend, name: str, limit: int = 400, files: bool = True) -> list[UnitRef]:
    """Units of this name, in any case (an index on names without case serves it); `files`:
    file units too."""
    where = f"{db.ci('u.name')} = {db.ci('?')}" + ("" if files else " AND u.kind <> 'file'")
    return [unit_from_row(r) for r in db.execute(UNIT_SELECT + f" WHERE {where} LIMIT ?", (name, limit))]


def units_named_each(db: StoreBackend, names: Sequence[str], limit: int = 400,
                     files: bool = True) -> list[list[UnitRef]]:
    """`units_named` of each name, in one statement (a round trip to a server costs more than
    the lookups): each name's own LIMITed lookup, their rows one after another."""
    if len(names) <= 1:
        return [units_named(db, n, limit, files) for n in names]
    where = f"{db.ci('u.name')} = {db.ci('?')}" + ("" if files else " AND u.kind <> 'file'")
    one = f"SELECT {{i}}, n.* FROM ({UNIT_SELECT} WHERE {where} LIMIT ?) n"
    out: list[list[UnitRef]] = [[] for _ in names]
    for row in db.execute(" UNION ALL ".join(one.format(i=i) for i in range(len(names))),
                          [x for n in names for x in (n, limit)]):
        out[int(row[0])].append(unit_from_row(row[1:]))
    return out


def units_name_prefix(db: StoreBackend, prefix: str, limit: int) -> list[UnitRef]:
    """Units but files whose name starts with `prefix` (in any case)."""
    cond, params = db.prefix("u.name", prefix)
    return [unit_from_row(r) for r in db.execute(
        UNIT_SELECT + f" WHERE {cond} AND u.kind <> 'file' LIMIT ?", (*params, limit))]


def units_name_like(db: StoreBackend, pattern: str, limit: int) -> list[UnitRef]:
    """Units but files whose name matches a LIKE pattern (escaped with a backslash)."""
    if not matchable(pattern):
        return []
    return [unit_from_row(r) for r in db.execute(
        UNIT_SELECT + f" WHERE u.name {db.like} ? ESCAPE '\\' AND u.kind <> 'file' LIMIT ?", (pattern, limit))]


def files_path_like(db: StoreBackend, pattern: str, limit: int) -> list[UnitRef]:
    """File units whose path matches a LIKE pattern (escaped with a backslash)."""
    if not matchable(pattern):
        return []
    return [unit_from_row(r) for r in db.execute(
        UNIT_SELECT + f" WHERE u.kind = 'file' AND f.path {db.like} ? ESCAPE '\\' LIMIT ?", (pattern, limit))]


def units_overlapping(db: StoreBackend, path: str, start: int, end: int) -> list[int]:
    """Ids of a file's units inside lines start..end or holding them."""
    return [int(r[0]) for r in db.execute(
        "SELECT u.id FROM units u JOIN files f ON f.id=u.file_id WHERE f.path=? AND "
        "((u.start_line>=? AND u.end_line<=?) OR (u.start_line<=? AND u.end_line>=?))",
        (path, start, end, start, end))]


def graph_state(db: StoreBackend) -> tuple[Any, Any]:
    """(number of edges, largest unit id or None): with the last update's time they say when
    the repo graph must be loaded again."""
    return (db.scalar("SELECT count(*) FROM edges", default=0),
            db.scalar("SELECT max(id) FROM units", default=0))


def file_imports(db: StoreBackend, path: str) -> list[str]:
    """The modules a file imports, in the order of their lines."""
    return [str(m) for (m,) in db.execute(
        "SELECT i.module FROM imports i JOIN files f ON f.id = i.file_id WHERE f.path = ? ORDER BY i.line",
        (path,))]


def file_constants(db: StoreBackend, path: str, limit: int = 20) -> list[str]:
    """The names of a file's first `limit` constants, by line."""
    return [str(r[0]) for r in db.execute(
        "SELECT u.name FROM units u JOIN files f ON f.id = u.file_id WHERE f.path = ? AND u.kind = 'constant' "
        "ORDER BY u.start_line LIMIT ?", (path, limit))]


def unit_bases(db: StoreBackend, unit_id: int) -> str | None:
    """A unit's base classes as stored (a JSON list), None when it has none or is unknown."""
    row = db.one("SELECT bases FROM units WHERE id = ?", (unit_id,))
    return row[0] if row and row[0] else None


def file_chunk_texts(db: StoreBackend, path: str) -> list[tuple[int, str]]:
    """(start line, text) of a file's chunks, by start line."""
    return [(int(s), str(t)) for s, t in db.execute(
        "SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
        "ORDER BY c.start_line", (path,))]


class StoreReads:
    """`backend.ContextReads` over a store: the reads context composition and answer openings
    make, on either backend."""

    def __init__(self, db: StoreBackend) -> None:
        self.db = db

    def callers(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return read.callers(self.db, unit_ids, kinds)

    def callees(self, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
        return read.callees(self.db, unit_ids, kinds)

    def get_unit(self, unit_id: int) -> UnitRef | None:
        return read.get_unit(self.db, unit_id)

    def file_outline(self, path: str) -> list[UnitRef]:
        return read.file_outline(self.db, path)

    def children(self, unit_id: int) -> list[UnitRef]:
        return read.children(self.db, unit_id)

    def file_imports(self, path: str) -> list[str]:
        return file_imports(self.db, path)

    def file_constants(self, path: str, limit: int = 20) -> list[str]:
        return file_constants(self.db, path, limit)

    def unit_bases(self, unit_id: int) -> list[str]:
        stored = unit_bases(self.db, unit_id)
        try:
            found = json.loads(stored) if stored else []
        except ValueError:
            return []
        return [str(b) for b in found] if isinstance(found, list) else []

    def summary_texts(self, units: Sequence[tuple[int, str, str, str]]) -> dict[int, tuple[str, str]]:
        return descriptions.summary_texts(self.db, units) if units else {}

    def file_chunk_texts(self, path: str) -> list[tuple[int, str]]:
        return file_chunk_texts(self.db, path)

    def file_hash(self, path: str) -> str | None:
        return file_hash(self.db, path)


def context_reads(source: StoreBackend | ContextReads) -> ContextReads:
    """The context reads of a store (a memoizing wrapper, `ContextReads` already, as it is)."""
    return source if isinstance(source, ContextReads) else StoreReads(source)
