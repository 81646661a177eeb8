"""Writing one file's rows: units, chunks, keyword rows, imports and its outgoing edges, on
either backend (rows in bulk and keyword rows are the backend's: `insert_rows`,
`insert_chunks`).

Callers wrap these in the store's `transaction()`, so a file is replaced whole or not at all.
"""

from __future__ import annotations

import bisect
import json
import secrets
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple

from coderag_tui.models import Excluded
from coderag_tui.parsing.identifiers import base_name, expand_identifiers, name_words, path_words
from coderag_tui.parsing.languages import is_prose
from coderag_tui.parsing.records import ParsedFile, ParsedUnit
from coderag_tui.store import rank_values
from coderag_tui.store.backend import StoreBackend


@dataclass(frozen=True)
class FileMeta:
    path: str
    hash: str
    size: int
    mtime_ns: int
    error: str = ""


@dataclass
class Removed:
    """What disappeared with a file's old rows: its unit names and the edges that pointed in."""

    names: set[str]
    inbound_edges: list[tuple[int, str]]  # (edge id, former target "qualname (path)")
    layout: set[tuple[str, str, str]]  # (name, kind, qualname) of the definitions it had
    prior_targets: dict[tuple[str, str], str]  # (src qualname, called name) -> target descriptor


FILES_GENERATION = "files_generation"  # meta key: a new value whenever the set of files changes

# Secondary indexes of the tables a build fills. A build into an empty index drops them and
# creates them once at the end (one sort per index beats growing the B-trees row by row); their SQL
# waits in meta, so a build killed in between gets them back at the start of the next run.
_BULK_TABLES = ("units", "edges", "chunks", "imports", "keyword_postings")  # (the last: PostgreSQL's)
_DEFERRED_META = "deferred_indexes"


def defer_indexes(db: StoreBackend) -> None:
    """Drop the bulk tables' secondary indexes until `restore_indexes` (call in a transaction)."""
    found = db.secondary_indexes(_BULK_TABLES)
    if not found:
        return
    pending = json.loads(db.get_meta(_DEFERRED_META) or "[]")
    db.set_meta(_DEFERRED_META, json.dumps(pending + [list(row) for row in found]))
    for name, _table, _sql in found:
        db.execute(f'DROP INDEX "{name}"')
    db.bulk_mode(True)


def restore_indexes(db: StoreBackend, skip: Collection[str] = ()) -> None:
    """Create the indexes `defer_indexes` dropped (call in a transaction), but those named in
    `skip`: a caller about to rewrite their columns in bulk creates them afterwards."""
    stored = db.get_meta(_DEFERRED_META)
    if not stored:
        return
    db.bulk_mode(True)  # (also for a killed build's indexes, made by the next run)
    left = []
    for name, table, sql in json.loads(stored):
        if db.has_table(name):
            continue
        if name in skip:
            left.append([name, table, sql])
        else:
            db.execute(sql)
    if left:
        db.set_meta(_DEFERRED_META, json.dumps(left))
    else:
        db.execute("DELETE FROM meta WHERE key=?", (_DEFERRED_META,))
        db.bulk_mode(False)


def remove_file_rows(db: StoreBackend, file_id: int, path: str) -> Removed:
    """Delete every row a file owns; edges from other files into it lose their target."""
    layout = {(n, k, q) for n, k, q in db.execute(
        "SELECT name, kind, qualname FROM units WHERE file_id=? AND kind<>'file'", (file_id,))}
    names = {n for n, _, _ in layout}
    found = db.rows(
        "SELECT e.id, u.qualname, u.start_line, u.kind FROM edges e JOIN units u ON u.id = e.dst "
        "WHERE u.file_id=? AND e.src_file<>? AND e.kind IN ('CALLS','INHERITS','IMPLEMENTS')",
        (file_id, file_id),
    )
    inbound = [(eid, f"{qual} ({path}:{line})") for eid, qual, line, _ in found]
    into_definitions = {eid for eid, _, _, kind in found if kind != "file"}
    prior = {
        (sq, name): f"{tq} ({tp}:{tl})"
        for sq, name, tq, tp, tl in db.execute(
            "SELECT s.qualname, e.name, t.qualname, f.path, t.start_line FROM edges e "
            "JOIN units s ON s.id = e.src JOIN units t ON t.id = e.dst JOIN files f ON f.id = t.file_id "
            "WHERE e.src_file=? AND e.kind='CALLS'",
            (file_id,),
        )
    }
    # the file's own calls already orphaned stay so when it changes again
    prior.update({(sq, name): str(orphan) for sq, name, orphan in db.execute(
        "SELECT s.qualname, e.name, e.orphan FROM edges e JOIN units s ON s.id = e.src "
        "WHERE e.src_file=? AND e.kind='CALLS' AND e.dst IS NULL AND e.orphan<>''", (file_id,))})
    # A file keeps its file unit id when re-indexed (see write_file), so edges into the file
    # itself (imports, file-level tests) stay; edges into its definitions are re-resolved.
    db.execute(  # derived edges: re-derived from the calls that resolve again
        "DELETE FROM edges WHERE kind='TESTS' AND src_file<>? AND dst IN "
        "(SELECT id FROM units WHERE file_id=? AND kind<>'file')",
        (file_id, file_id),
    )
    # each edge into a definition rewritten once, target and former target together (a
    # PostgreSQL row rewritten is a new row version with an entry in every index of edges); an
    # edge into the file unit keeps its target
    db.update_rows("edges", ("dst", "orphan"), "id",
                   [(None, former, eid) for eid, former in inbound if eid in into_definitions])
    db.update_rows("edges", ("orphan",), "id",
                   [(former, eid) for eid, former in inbound if eid not in into_definitions])
    # (no other edge from another file points into its definitions: TESTS edges went above,
    # imports point at file units, DEFINES and CONTAINS stay inside a file)
    db.execute("DELETE FROM edges WHERE src_file=?", (file_id,))
    db.delete_keyword_rows(file_id)
    db.execute("DELETE FROM chunks WHERE file_id=?", (file_id,))
    rank_values.delete_file_values(db, file_id)
    db.execute("DELETE FROM imports WHERE file_id=?", (file_id,))
    db.execute("DELETE FROM summaries WHERE unit_id IN (SELECT id FROM units WHERE file_id=?)", (file_id,))
    db.execute("DELETE FROM units WHERE file_id=?", (file_id,))
    return Removed(names=names, inbound_edges=inbound, layout=layout, prior_targets=prior)


def mark_file_set_changed(db: StoreBackend) -> None:
    """Give `files_generation` a new value: files were added, removed or renamed (readers keep
    tables of every file's path while it stays the same). Random, not a counter: a rolled-back
    change must not hand the same value to a different set of files."""
    db.set_meta(FILES_GENERATION, secrets.token_hex(8))


def delete_file(db: StoreBackend, path: str) -> Removed | None:
    row = db.one("SELECT id FROM files WHERE path=?", (path,))
    if row is None:
        return None
    mark_file_set_changed(db)
    file_unit_id = db.scalar("SELECT id FROM units WHERE file_id=? AND kind='file'", (row[0],))
    removed = remove_file_rows(db, row[0], path)
    db.execute("DELETE FROM files WHERE id=?", (row[0],))
    # edges into the file itself: imports are re-resolved, file-level TESTS edges re-derived
    db.execute("UPDATE edges SET dst=NULL WHERE dst=? AND kind='IMPORTS'", (file_unit_id,))
    db.execute("DELETE FROM edges WHERE dst=? AND kind='TESTS'", (file_unit_id,))
    return removed


class FileRows(NamedTuple):
    """One parsed file as plain row tuples, built in the parse workers (cheap to pickle).

    Ids are relative: a unit is its index in the file (0 = the file unit), a chunk its index.
    """

    language: str
    lines: int
    structured: bool
    has_errors: bool
    # (index, parent index, kind, name, qualname, signature, params, return type, decorators,
    #  docstring, bases, start line, end line, is_test)
    units: list[tuple[Any, ...]]
    # (src index, dst index or None, kind, name, receiver, line, argc); an INHERITS edge's receiver
    # is the name of its base (`pkg.Base[T]` -> Base)
    edges: list[tuple[Any, ...]]
    imports: list[tuple[str, str, int]]  # (module, names JSON, line)
    # (unit index, start line, end line, node kinds, scope, hash, header, text)
    chunks: list[tuple[Any, ...]]
    # (names, path words, signatures, docstrings, code sub-words): each chunk's keyword row
    fts: list[tuple[str, str, str, str, str]]
    runs: bytes = b""  # the chunks' word runs (rank_values.runs_blob), made here in the worker


def file_rows(parsed: ParsedFile) -> FileRows:
    """Every row a parsed file will write, with file-relative ids (runs in parse workers)."""
    units = parsed.units
    unit_rows = [
        (u.index, u.parent, u.kind, u.name, u.qualname, u.signature, _json_list(u.params), u.return_type,
         _json_list(u.decorators), u.docstring, _json_list(u.bases), u.start_line, u.end_line, int(u.is_test))
        for u in units
    ]
    edges: list[tuple[Any, ...]] = []
    for u in units:
        i = u.index
        if u.parent is not None:
            parent = units[u.parent]
            kind = "DEFINES" if parent.kind not in ("file", "module") and u.kind == "method" else "CONTAINS"
            edges.append((u.parent, i, kind, u.name, "", u.start_line, -1))
        for call in u.calls:  # (name, receiver, line, argc)
            edges.append((i, None, "CALLS", *call))
        for base in u.bases:
            edges.append((i, None, "INHERITS", base, base_name(base), u.start_line, -1))  # receiver: the name
    for imp in parsed.imports:
        edges.append((0, None, "IMPORTS", imp.module, ",".join(imp.names), imp.line, -1))
    import_rows = [(i.module, _json_list(i.names), i.line) for i in parsed.imports]
    chunk_rows: list[tuple[Any, ...]] = []
    fts_rows: list[tuple[str, str, str, str, str]] = []
    if parsed.chunks:
        pwords = path_words(parsed.path)
        starts = [u.start_line for u in units]
        # prose (docs, translations: half of Django's chunks) is words: its rare camelCase names
        # stay searchable whole; skipping their sub-words saves ~4.5% of a worker's instructions
        expand = not is_prose(parsed.language)
        for c in parsed.chunks:
            chunk_rows.append(
                (c.unit_index, c.start_line, c.end_line, ",".join(c.node_kinds), " > ".join(c.scope), c.hash,
                 c.context_text[: len(c.context_text) - len(c.text)], c.text)
            )
            inside = _units_in(units, starts, c.unit_index, c.start_line, c.end_line)
            fts_rows.append(
                (
                    name_words(*(u.name for u in inside), *c.scope),
                    pwords,
                    " ".join(u.signature for u in inside if u.signature),
                    " ".join(u.docstring for u in inside if u.docstring),
                    expand_identifiers(c.text) if expand else "",  # the code column: chunk text, then these
                )
            )
    return FileRows(parsed.language, parsed.lines, parsed.structured, parsed.has_errors, unit_rows, edges,
                    import_rows, chunk_rows, fts_rows,
                    rank_values.runs_blob(c.text for c in parsed.chunks) if parsed.chunks else b"")


def mark_own_orphans(db: StoreBackend, file_id: int, prior: dict[tuple[str, str], str]) -> None:
    """After a changed file's calls are resolved again: those that had a target before the change
    and have none now are orphans (a function renamed with its caller in the same file), like
    the calls from other files into it (see remove_file_rows)."""
    rows = db.rows("SELECT e.id, s.qualname, e.name FROM edges e JOIN units s ON s.id = e.src "
                   "WHERE e.src_file=? AND e.kind='CALLS' AND e.dst IS NULL", (file_id,))
    db.update_rows("edges", ("orphan",), "id",
                   [(prior[(sq, name)], eid) for eid, sq, name in rows if (sq, name) in prior])


@dataclass
class WriteBatch:
    """What a caller writing many files in one transaction keeps between them: the next free ids
    (0: look it up), the file ids of the paths indexed before (None: each looked up), and whether
    a file was added (the set of files is then marked changed once, by `finish`)."""

    next_unit: int = 0
    next_chunk: int = 0
    next_file: int = 0
    known: dict[str, int] | None = None
    added: bool = False

    def finish(self, db: StoreBackend) -> None:
        if self.added:
            mark_file_set_changed(db)
            self.added = False


def write_file(db: StoreBackend, parsed: ParsedFile | FileRows, meta: FileMeta,
               batch: WriteBatch | None = None) -> tuple[int, Removed | None]:
    """Replace a file's rows with a fresh parse. Returns its file id and what was removed.
    `batch`: kept by a caller writing many files in one transaction (who then calls its
    `finish`); it saves three statements per file."""
    rows = parsed if isinstance(parsed, FileRows) else file_rows(parsed)
    alone = batch is None
    batch = batch or WriteBatch()
    if batch.known is not None:
        found = batch.known.get(meta.path)
    else:
        found = db.scalar("SELECT id FROM files WHERE path=?", (meta.path,))
    removed = None
    now = time.time()
    file_unit_id = None
    fields = (rows.language, meta.hash, meta.size, meta.mtime_ns, rows.lines, int(rows.structured),
              int(rows.has_errors), meta.error, now)
    if found is not None:
        file_id = int(found)
        file_unit_id = db.scalar("SELECT id FROM units WHERE file_id=? AND kind='file'", (file_id,))
        removed = remove_file_rows(db, file_id, meta.path)
        batch.next_unit = batch.next_chunk = 0  # the highest ids may have gone
        db.execute("UPDATE files SET language=?, hash=?, size=?, mtime_ns=?, lines=?, structured=?, "
                   "has_errors=?, error=?, indexed_at=? WHERE id=?", (*fields, file_id))
    else:
        if not batch.next_file:
            batch.next_file = int(db.scalar("SELECT coalesce(max(id), 0) FROM files", default=0)) + 1
        file_id = batch.next_file
        batch.next_file += 1
        db.insert_rows("files", _FILE_COLUMNS, [(file_id, meta.path, *fields)])
        batch.added = True
    _insert_rows(db, file_id, rows, file_unit_id, batch)
    if alone:
        batch.finish(db)
    return file_id, removed


def _insert_rows(db: StoreBackend, file_id: int, rows: FileRows, file_unit_id: int | None,
                 batch: WriteBatch) -> None:
    # Explicit ids (max + 1) let every table be written in bulk.
    if not batch.next_unit:
        batch.next_unit = int(db.scalar("SELECT coalesce(max(id), 0) FROM units", default=0)) + 1
    first_unit = batch.next_unit
    ids = list(range(first_unit, first_unit + len(rows.units)))
    if file_unit_id is not None and ids:
        ids[0] = int(file_unit_id)
    batch.next_unit = max(batch.next_unit, max(ids, default=0) + 1)
    db.insert_rows("units", _UNIT_COLUMNS,
                   [(ids[r[0]], file_id, None if r[1] is None else ids[r[1]], *r[2:]) for r in rows.units])
    db.insert_rows("edges", _EDGE_COLUMNS,
                   [(ids[s], file_id, None if d is None else ids[d], k, n, r, ln, a)
                    for s, d, k, n, r, ln, a in rows.edges])
    db.insert_rows("imports", ("file_id", "module", "names", "line"), [(file_id, *i) for i in rows.imports])
    if not rows.chunks:
        return
    if not batch.next_chunk:
        batch.next_chunk = int(db.scalar("SELECT coalesce(max(id), 0) FROM chunks", default=0)) + 1
    first_chunk = batch.next_chunk
    batch.next_chunk = first_chunk + len(rows.chunks)
    db.insert_chunks(file_id, [(first_chunk + n, file_id, ids[c[0]], *c[1:]) for n, c in enumerate(rows.chunks)],
                     rows.fts)
    rank_values.write_runs(db, file_id, [c[7] for c in rows.chunks], rows.runs)


_FILE_COLUMNS = ("id", "path", "language", "hash", "size", "mtime_ns", "lines", "structured", "has_errors", "error",
                 "indexed_at")
_UNIT_COLUMNS = ("id", "file_id", "parent_id", "kind", "name", "qualname", "signature", "params", "return_type",
                 "decorators", "docstring", "bases", "start_line", "end_line", "is_test")
_EDGE_COLUMNS = ("src", "src_file", "dst", "kind", "name", "receiver", "line", "argc")


def _json_list(items: tuple[str, ...]) -> str:
    """json.dumps(items), character for character, without its per-call set-up (three calls per
    unit: params, decorators, bases)."""
    return "[" + ", ".join(map(encode_basestring_ascii, items)) + "]" if items else "[]"


def _units_in(units: Sequence[ParsedUnit], starts: list[int], owner: int, start: int, end: int) -> list[ParsedUnit]:
    """The chunk's own unit (unless it is the file) and the units that start inside the chunk."""
    out = [units[owner]] if owner else []
    lo = bisect.bisect_left(starts, start, 1)
    hi = bisect.bisect_right(starts, end, 1)
    out.extend(u for u in units[lo:hi] if u.index != owner)
    return out


EXCLUDED_META = "default_excluded"  # meta key: what the last full walk's default rules left out


def save_excluded(db: StoreBackend, excluded: Iterable[Excluded]) -> None:
    with db.transaction():
        db.set_meta(EXCLUDED_META, json.dumps([[e.rule, e.folder, e.files, e.folders, e.capped]
                                               for e in excluded]))
