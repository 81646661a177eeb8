"""Read queries over the index, returning the frozen dataclasses of `coderag_tui.models`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from coderag_tui.models import EdgeRef, Excluded, IndexCounts, IndexStatus, LanguageCount, UnitRef
from coderag_tui.store import confidence, graph_edges
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.sql import like_escape, matchable

UNIT_SELECT = (
    "SELECT u.id, f.path, u.kind, u.name, u.qualname, u.signature, u.start_line, u.end_line, "
    "f.language, u.docstring, u.parent_id FROM units u JOIN files f ON f.id = u.file_id"
)
_KIND_RANK = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 1, "function": 1,
              "method": 2, "constant": 3, "file": 4}


def unit_from_row(row: Sequence) -> UnitRef:
    return UnitRef(
        id=row[0], path=row[1], kind=row[2], name=row[3], qualname=row[4], signature=row[5],
        start_line=row[6], end_line=row[7], language=row[8], docstring=row[9], parent_id=row[10],
    )


def get_unit(db: StoreBackend, unit_id: int) -> UnitRef | None:
    row = db.one(UNIT_SELECT + " WHERE u.id=?", (unit_id,))
    return unit_from_row(row) if row else None


def get_units(db: StoreBackend, ids: Iterable[int]) -> dict[int, UnitRef]:
    ids = list(dict.fromkeys(ids))
    out: dict[int, UnitRef] = {}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ",".join("?" * len(part))
        for row in db.execute(UNIT_SELECT + f" WHERE u.id IN ({marks})", tuple(part)):
            out[row[0]] = unit_from_row(row)
    return out


def file_unit(db: StoreBackend, path: str) -> UnitRef | None:
    row = db.one(UNIT_SELECT + " WHERE f.path=? AND u.kind='file'", (path,))
    return unit_from_row(row) if row else None


def paths_ending(db: StoreBackend, suffix: str, limit: int = 20) -> list[str]:
    """Indexed paths equal to `suffix` or ending with `/suffix`, shortest first."""
    if not matchable(suffix):
        return []
    rows = db.rows(f"SELECT path FROM files WHERE path = ? OR path {db.like} ? ESCAPE '\\' ORDER BY length(path), path "
                   "LIMIT ?", (suffix, "%/" + like_escape(suffix), limit))
    return [str(r[0]) for r in rows]


def file_outline(db: StoreBackend, path: str) -> list[UnitRef]:
    return [unit_from_row(r) for r in db.execute(UNIT_SELECT + " WHERE f.path=? ORDER BY u.start_line, u.id", (path,))]


def units_at(db: StoreBackend, path: str, line: int) -> list[UnitRef]:
    """Units of a file that contain a line, innermost first."""
    rows = db.rows(
        UNIT_SELECT + " WHERE f.path=? AND u.start_line<=? AND u.end_line>=? "
        "ORDER BY (u.end_line - u.start_line), u.id DESC",
        (path, line, line),
    )
    return [unit_from_row(r) for r in rows]


def _rank(u: UnitRef, tier: int) -> tuple[int, int, int, int, str]:
    test = 1 if "test" in u.path.lower() else 0
    return (tier, test, _KIND_RANK.get(u.kind, 2), len(u.path), u.path)


# Longer queries are matched exactly only: SQLite refuses LIKE patterns over 50,000 bytes, and
# no definition's name is a prefix, part or subsequence match worth finding at that length.
MAX_LIKE_QUERY = 1000
_MAX_FUZZY_QUERY = 64  # '%q%u%e%r%y%': each letter more, more backtracking per name


def find_symbols(db: StoreBackend, query: str, limit: int = 20, kinds: Sequence[str] | None = None,
                 fuzzy: bool = True) -> list[UnitRef]:
    """Definitions matching a name: exact, qualified, case-insensitive, prefix, then (`fuzzy`:
    they read every name) part and letters in order."""
    q = query.strip().rstrip("()").strip()
    if not q:
        return []
    like = len(q) <= MAX_LIKE_QUERY
    found: dict[int, tuple[tuple[int, int, int, int, str], UnitRef]] = {}

    def add(rows: Iterable[Sequence], tier: int) -> None:
        for row in rows:
            u = unit_from_row(row)
            if kinds and u.kind not in kinds:
                continue
            if u.kind == "file" and tier > 1:
                continue
            key = _rank(u, tier)
            if u.id not in found or found[u.id][0] > key:
                found[u.id] = (key, u)

    last = q.replace("::", ".").replace("#", ".").split(".")[-1]
    add(db.execute(UNIT_SELECT + " WHERE u.name=?", (q,)), 0)
    if "." in q or "::" in q or "#" in q:
        qual = q.replace("::", ".").replace("#", ".")
        if like:
            add(db.execute(UNIT_SELECT + f" WHERE u.qualname=? OR u.qualname {db.like} ?", (qual, "%." + qual)), 0)
        else:
            add(db.execute(UNIT_SELECT + " WHERE u.qualname=?", (qual,)), 0)
        add(db.execute(UNIT_SELECT + " WHERE u.name=?", (last,)), 2)
    if "/" in q and like:
        add(db.execute(UNIT_SELECT + f" WHERE u.kind='file' AND (f.path=? OR f.path {db.like} ?)",
                       (q, "%" + q + "%")), 1)
    if len(found) < limit:
        add(db.execute(UNIT_SELECT + f" WHERE {db.ci('u.name')} = {db.ci('?')}", (last,)), 1)
    word = like_escape(last)
    if len(found) < limit and like:
        cond, params = db.prefix("u.name", last)
        add(db.execute(UNIT_SELECT + f" WHERE {cond} LIMIT 200", params), 3)
    if len(found) < limit and like and fuzzy:
        add(db.execute(UNIT_SELECT + f" WHERE u.name {db.like} ? ESCAPE '\\' LIMIT 200", ("%" + word + "%",)), 4)
    if len(found) < limit and fuzzy and 3 <= len(last) <= _MAX_FUZZY_QUERY:
        # fuzzy: the names holding the query's letters in order, shortest first (LIKE '%q%r%y%'
        # in SQLite: reading every distinct name into Python took ~90 ms on Django)
        subsequence = "%" + "%".join(like_escape(ch) for ch in last) + "%"
        for (name,) in db.execute(
                f"SELECT name FROM units WHERE kind<>'file' AND name {db.like} ? ESCAPE '\\' "
                "GROUP BY name ORDER BY length(name), name LIMIT ?", (subsequence, limit * 2)):
            add(db.execute(UNIT_SELECT + " WHERE u.name=?", (name,)), 5)
    ranked = sorted(found.values(), key=lambda kv: kv[0])
    return [u for _, u in ranked[:limit]]


def _edge_rows(db: StoreBackend, end: str, unit_ids: Sequence[int], kinds: Sequence[str], order: str
               ) -> list[tuple[Any, ...]]:
    """(src, dst, kind, name, line, receiver, src_file) of the edges of these kinds whose `end`
    ('src' or 'dst') is one of the units."""
    marks = ",".join("?" * len(unit_ids))
    kmarks = ",".join("?" * len(kinds))
    return db.rows(
        f"SELECT e.src, e.dst, e.kind, e.name, e.line, e.receiver, e.src_file FROM edges e WHERE e.{end} IN ({marks}) "
        f"AND e.kind IN ({kmarks}) ORDER BY {order}",
        (*unit_ids, *kinds),
    )


def callers(db: StoreBackend, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
    """Edges into the units, seen from their sources (who calls / inherits / tests them)."""
    if not unit_ids:
        return []
    rows = _edge_rows(db, "dst", unit_ids, kinds, "e.src_file, e.line, e.id")
    units = get_units(db, [r[0] for r in rows] + [r[1] for r in rows])
    sure = _sureness(db, rows)
    edges = [
        EdgeRef(kind, units.get(src), name, line, source=units.get(dst), how=how, confidence=conf)
        for (src, dst, kind, name, line, _, _), (how, conf) in zip(rows, sure, strict=True)
        if src in units
    ]
    return sorted(edges, key=lambda e: -e.confidence)  # stable: file and line order within a level


def callees(db: StoreBackend, unit_ids: Sequence[int], kinds: Sequence[str] = ("CALLS",)) -> list[EdgeRef]:
    """Edges out of the units: what they call (resolved to a unit, or just a name)."""
    if not unit_ids:
        return []
    rows = _edge_rows(db, "src", unit_ids, kinds, "e.line, e.id")
    units = get_units(db, [r[0] for r in rows] + [r[1] for r in rows if r[1] is not None])
    sure = _sureness(db, rows)
    return [
        EdgeRef(kind, units.get(dst) if dst is not None else None, name, line, source=units.get(src),
                how=how, confidence=conf)
        for (src, dst, kind, name, line, _, _), (how, conf) in zip(rows, sure, strict=True)
    ]


def _sureness(db: StoreBackend, rows: Sequence[Sequence]) -> list[tuple[str, float]]:
    return confidence.sureness(graph_edges.StoreGraph(db), rows)


def children(db: StoreBackend, unit_id: int) -> list[UnitRef]:
    return [unit_from_row(r) for r in db.execute(UNIT_SELECT + " WHERE u.parent_id=? ORDER BY u.start_line", (unit_id,))]


def importers(db: StoreBackend, path: str) -> list[UnitRef]:
    """File units that import the file at path."""
    rows = db.rows(
        UNIT_SELECT + " WHERE u.id IN (SELECT e.src FROM edges e JOIN units t ON t.id=e.dst "
        "JOIN files tf ON tf.id=t.file_id WHERE e.kind='IMPORTS' AND tf.path=?) ORDER BY f.path",
        (path,),
    )
    return [unit_from_row(r) for r in rows]


def orphans(db: StoreBackend, limit: int = 200) -> list[EdgeRef]:
    """Calls whose target was removed or renamed (a breaking change: code still calls what is gone)."""
    # the partial index holds just the orphans, but without statistics SQLite prefers
    # edges_dst (every unresolved call: a scan of ~45 ms on Django, twice per watcher batch);
    # a fresh build that was stopped before its indexes came back has neither
    hint = " INDEXED BY edges_orphan" if db.dialect == "sqlite" and db.has_table("edges_orphan") else ""
    rows = db.rows(
        f"SELECT e.src, e.name, e.line, e.orphan, e.kind FROM edges e{hint} WHERE e.orphan<>'' AND e.dst IS NULL "
        "ORDER BY e.src_file, e.line LIMIT ?",
        (limit,),
    )
    units = get_units(db, [r[0] for r in rows])
    return [EdgeRef(kind, None, f"{name} (was {orphan})", line, source=units.get(src))
            for src, name, line, orphan, kind in rows]


def skip_kinds(db: StoreBackend) -> dict[str, int]:
    """Skipped files by kind of reason. An error or a file indexed as plain text keeps its reason
    after the kind ("error: why", "partial: why"): counted under the kind."""
    kinds: dict[str, int] = {}
    for reason, n in db.rows("SELECT reason, count(*) FROM skips GROUP BY reason"):
        kind = str(reason).split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + int(n)
    return dict(sorted(kinds.items()))


def counts(db: StoreBackend) -> IndexCounts:
    """The index's counts, as every interface shows them (see `IndexCounts`)."""
    skips = skip_kinds(db)
    vectors = 0
    model = db.get_meta("embed_model")
    if model and db.has_table("vectors"):
        vectors = int(db.scalar(
            "SELECT count(*) FROM chunks c WHERE EXISTS (SELECT 1 FROM vectors v WHERE v.hash=c.hash AND v.model=?) "
            f"OR EXISTS ({_DOC_VECTOR})", (model, model), default=0))
    return IndexCounts(
        files=int(db.scalar("SELECT count(*) FROM files", default=0)),
        units=int(db.scalar("SELECT count(*) FROM units WHERE kind<>'file'", default=0)),
        chunks=int(db.scalar("SELECT count(*) FROM chunks", default=0)),
        vectors=vectors,
        # a file indexed as plain text ("partial: why") is indexed, not skipped
        skipped=sum(int(n) for reason, n in skips.items() if reason not in ("error", "partial")),
        errors=int(skips.get("error", 0)),
    )


def status(db: StoreBackend, repo_root: str) -> IndexStatus:
    langs = []
    unit_counts: dict[str, int] = dict(db.rows(
        "SELECT f.language, count(*) FROM units u JOIN files f ON f.id=u.file_id WHERE u.kind<>'file' "
        "GROUP BY f.language"))
    chunk_counts: dict[str, int] = dict(db.rows(
        "SELECT f.language, count(*) FROM chunks c JOIN files f ON f.id=c.file_id GROUP BY f.language"))
    for lang, n in db.rows("SELECT language, count(*) FROM files GROUP BY language ORDER BY count(*) DESC, language"):
        langs.append(LanguageCount(lang, n, unit_counts.get(lang, 0), chunk_counts.get(lang, 0)))
    skips = skip_kinds(db)
    problems = tuple(
        (path, reason) for path, reason in db.rows(
            "SELECT path, reason FROM skips WHERE reason = 'error' OR reason LIKE 'error:%'"
            " OR reason LIKE 'partial:%' ORDER BY path LIMIT 50"))
    n = counts(db)
    return IndexStatus(
        repo_root=repo_root,
        db_path=db.location,
        schema_version=db.schema_version,
        files=n.files,
        units=n.units,
        chunks=n.chunks,
        edges=int(db.scalar("SELECT count(*) FROM edges", default=0)),
        vectors=n.vectors,
        embed_model=db.get_meta("embed_model"),
        languages=tuple(langs),
        skips=skips,
        errors=n.errors,
        index_bytes=db.size_bytes(),
        last_update=float(db.get_meta("last_update") or 0),
        commit=db.get_meta("commit"),
        orphaned=tuple(orphans(db, 50)),
        problems=problems,
        excluded=excluded(db),
        secrets=tuple(str(p) for (p,) in db.rows(
            "SELECT path FROM skips WHERE reason = 'secret' ORDER BY path LIMIT 50")),
    )


def excluded(db: StoreBackend) -> tuple[Excluded, ...]:
    """What the last full walk's default rules left out (nothing when the stored value is unreadable)."""
    try:
        rows = json.loads(db.get_meta("default_excluded") or "[]")
        return tuple(Excluded(str(r), str(f), int(n), int(k), bool(c)) for r, f, n, k, c in rows)
    except (ValueError, TypeError):
        return ()


def unit_kinds(db: StoreBackend) -> set[str]:
    """The kinds of unit the index holds."""
    return {str(k) for (k,) in db.rows("SELECT DISTINCT kind FROM units")}


def languages(db: StoreBackend) -> set[str]:
    """The languages of the indexed files."""
    return {str(k) for (k,) in db.rows("SELECT DISTINCT language FROM files") if k}


def file_count(db: StoreBackend) -> int:
    return int(db.scalar("SELECT count(*) FROM files", default=0))


def has_file(db: StoreBackend, path: str) -> bool:
    """Is `path` (a repository path, exactly as stored) in the index?"""
    return db.one("SELECT 1 FROM files WHERE path=?", (path,)) is not None


def paths_ending_with(db: StoreBackend, suffix: str, limit: int = 5) -> list[str]:
    """Indexed paths that end in `suffix`, shortest first (a near-miss for a path the user gave)."""
    if not matchable(suffix):
        return []
    rows = db.rows(f"SELECT path FROM files WHERE path {db.like} ? ORDER BY length(path) LIMIT ?",
                   ("%" + suffix, limit))
    return [str(r[0]) for r in rows]


def file_facts(db: StoreBackend, path: str) -> tuple[str, int, bool] | None:
    """(language, lines, has syntax errors) of an indexed file."""
    row = db.one("SELECT language, lines, has_errors FROM files WHERE path=?", (path,))
    return (str(row[0]), int(row[1]), bool(row[2])) if row else None


def file_summaries(db: StoreBackend, path: str) -> dict[int, str]:
    """Stored summaries of the units of one file, by unit id."""
    return {int(i): str(t) for i, t in db.rows(
        "SELECT s.unit_id, s.text FROM summaries s JOIN units u ON u.id=s.unit_id "
        "JOIN files f ON f.id=u.file_id WHERE f.path=?", (path,))}


def file_imports(db: StoreBackend, path: str) -> list[tuple[str, str, int]]:
    """(module, names as a JSON list, line) of each import statement of one file, in line order."""
    return [(str(m), str(n or ""), int(line)) for m, n, line in db.rows(
        "SELECT i.module, i.names, i.line FROM imports i JOIN files f ON f.id=i.file_id "
        "WHERE f.path=? ORDER BY i.line", (path,))]


def import_targets(db: StoreBackend, file_unit_id: int) -> dict[int, str]:
    """The repository file each resolved import of a file points to, by import line."""
    return {int(line): str(p) for line, p in db.rows(
        "SELECT e.line, tf.path FROM edges e JOIN units t ON t.id=e.dst JOIN files tf ON tf.id=t.file_id "
        "WHERE e.kind='IMPORTS' AND e.src=?", (file_unit_id,))}


# a chunk embedded with its summary has its vector under its document's key (store/embed_docs.py)
_DOC_VECTOR = ("SELECT 1 FROM embed_docs d JOIN vectors v ON v.hash = d.key "
               "WHERE d.chunk_hash = c.hash AND v.model = ?")


def file_index_states(db: StoreBackend, embed_model: str | None) -> dict[str, tuple[str, int, int]]:
    """Every indexed file: path -> (language, chunks, chunks with a vector of `embed_model`)."""
    return {str(p): (str(lang), int(c), int(v)) for p, lang, c, v in db.execute(
        "SELECT f.path, f.language, count(c.id), coalesce(sum(CASE WHEN c.id IS NOT NULL AND (EXISTS (SELECT 1 "
        f"FROM vectors v WHERE v.hash = c.hash AND v.model = ?) OR EXISTS ({_DOC_VECTOR})) THEN 1 ELSE 0 END), 0) "
        "FROM files f LEFT JOIN chunks c ON c.file_id = f.id GROUP BY f.id, f.path, f.language",
        (embed_model, embed_model))}


def skip_reasons(db: StoreBackend) -> dict[str, str]:
    """Files the last index run skipped: path -> why."""
    return {str(p): str(r) for p, r in db.rows("SELECT path, reason FROM skips")}


def conversation_list(db: StoreBackend, limit: int = 100,
                      owner: str | None = None) -> list[tuple[int, str, float, int, str]]:
    """Stored conversations, newest first: (id, title, updated, questions asked, the last one);
    with `owner`, only theirs."""
    mine = "WHERE c.owner = ? " if owner is not None else ""
    rows = db.rows(
        "SELECT c.id, c.title, c.updated, "
        "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user'), "
        "coalesce((SELECT m.content FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user' "
        "ORDER BY m.id DESC LIMIT 1), '') "
        f"FROM conversations c {mine}ORDER BY c.updated DESC, c.id DESC LIMIT ?",
        (*((owner,) if owner is not None else ()), limit))
    return [(int(i), str(t), float(u), int(n), str(last)) for i, t, u, n, last in rows]
