"""The SQL of embedding documents with a summary (migration 12).

A chunk is embedded as its header and code, its vector keyed by the chunk hash. Once its unit has
a summary (of any model, as in the summaries' keyword rows) the chunk is embedded as its header,
the summary and its code instead, keyed by a hash of that document: a new or changed summary is a
new key, embedded once; identical documents share one vector. Until the new document has a
vector, search keeps the one the chunk had (plain or an older document's), and only then is that
one dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from coderag_tui.store.backend import StoreBackend

ABOUT_CHARS = 600  # of a summary in the document (the embedding model reads ~256 tokens)
PREFIX = "doc:"  # document keys never look like a chunk hash

_WANTED = (
    "SELECT c.hash, min(s.text) FROM unit_summaries s JOIN files f ON f.path=s.path "
    "JOIN units u ON u.file_id=f.id AND u.kind=s.kind AND u.qualname=s.qualname "
    "JOIN chunks c ON c.unit_id=u.id GROUP BY c.hash")


def about_text(summary: str) -> str:
    text = " ".join(summary.split())
    return text if len(text) <= ABOUT_CHARS else text[: ABOUT_CHARS - 1] + "…"


def document(header: str, text: str, about: str) -> str:
    """What is embedded for a chunk with a summary: where it is, what it does, its code."""
    return f"{header}# Summary: {about}\n{text}"


def doc_key(chunk_hash: str, about: str) -> str:
    return PREFIX + hashlib.blake2b(f"{chunk_hash}\x1f{about}".encode("utf-8", "replace"),
                                    digest_size=16).hexdigest()


def sync(db: StoreBackend, dry_run: bool = False) -> int:
    """Make the current documents those of the chunks whose unit has a summary now; returns how
    many changed (a document to embed, or a chunk back to its plain vector). Writes only when something changed (never when
    `dry_run`: then it only counts)."""
    if not db.has_table("embed_docs"):
        return 0
    searched = db.get_meta("summaries_in_search") == "1"  # see store.descriptions.summaries_searched
    wanted = {str(h): about_text(str(t)) for h, t in db.execute(_WANTED) if str(t).strip()} if searched else {}
    current = {str(h): str(k) for h, k in db.execute("SELECT chunk_hash, key FROM embed_docs WHERE current=1")}
    changes = {h: doc_key(h, a) for h, a in wanted.items() if current.get(h) != doc_key(h, a)}
    gone = [h for h in current if h not in wanted]
    if dry_run or (not changes and not gone):
        return len(changes) + len(gone)
    with db.transaction():
        for h in [*changes, *gone]:
            db.execute("UPDATE embed_docs SET current=0 WHERE chunk_hash=? AND current=1", (h,))
        db.executemany("INSERT INTO embed_docs(key, chunk_hash, about, current) VALUES(?,?,?,1) ON CONFLICT(key) "
                       "DO UPDATE SET chunk_hash = excluded.chunk_hash, about = excluded.about, current = 1",
                       [(k, h, wanted[h]) for h, k in changes.items()])
    return len(changes) + len(gone)


def pending_docs(db: StoreBackend, paths: Sequence[str] | None = None) -> list[str]:
    """Keys of the current documents that have no vector yet (of chunks in `paths`, when given)."""
    if not db.has_table("embed_docs"):
        return []
    sql = ("SELECT d.key FROM embed_docs d WHERE d.current=1 AND NOT EXISTS (SELECT 1 FROM vectors v "
           "WHERE v.hash=d.key) AND EXISTS (SELECT 1 FROM chunks c WHERE c.hash=d.chunk_hash{where}) ORDER BY d.key")
    if paths is None:
        return [str(r[0]) for r in db.execute(sql.format(where=""))]
    if not paths:
        return []
    where = " AND c.file_id IN (SELECT id FROM files WHERE path IN ({marks}))"
    return [str(r[0]) for r in db.rows_in(sql.format(where=where), list(paths))]


def doc_parts(db: StoreBackend, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
    """(head, code) of the documents of these keys: the head is the chunk's header and the
    summary line, what every window of a long document keeps (see `document`)."""
    return {str(k): (document(str(h), "", str(a)), str(t)) for k, a, h, t in db.rows_in(
        "SELECT d.key, min(d.about), min(c.header), min(c.text) FROM embed_docs d JOIN chunks c "
        "ON c.hash=d.chunk_hash WHERE d.key IN ({marks}) GROUP BY d.key", list(keys))}


def chunk_hashes(db: StoreBackend, keys: Sequence[str]) -> dict[str, str]:
    """Vector key -> the chunk hash it stands for, for the document keys among `keys`."""
    docs = [k for k in keys if k.startswith(PREFIX)]
    if not docs or not db.has_table("embed_docs"):
        return {}
    return {str(k): str(h) for k, h in db.rows_in(
        "SELECT key, chunk_hash FROM embed_docs WHERE key IN ({marks})", docs)}


def obsolete_vectors(db: StoreBackend) -> list[int]:
    """Drop the document rows no chunk needs any more, and return the ids of the vectors nothing
    stands for: no chunk has their hash and no document their key, or the chunk's current
    document has a vector of its own. Call inside a transaction."""
    if not db.has_table("embed_docs"):
        return [int(r[0]) for r in db.execute(
            "SELECT v.id FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = v.hash)")]
    db.execute("DELETE FROM embed_docs WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash=embed_docs.chunk_hash)")
    # an older document (or none) is kept only while the one now wanted has no vector
    db.execute(
        "DELETE FROM embed_docs WHERE current=0 AND EXISTS (SELECT 1 FROM vectors v WHERE v.hash = coalesce("
        "(SELECT e.key FROM embed_docs e WHERE e.chunk_hash=embed_docs.chunk_hash AND e.current=1), "
        "embed_docs.chunk_hash))")
    orphans = [int(r[0]) for r in db.execute(
        "SELECT v.id FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = v.hash) "
        "AND NOT EXISTS (SELECT 1 FROM embed_docs d WHERE d.key = v.hash)")]
    superseded = [int(r[0]) for r in db.execute(
        "SELECT v.id FROM vectors v JOIN embed_docs d ON d.chunk_hash = v.hash WHERE d.current=1 "
        "AND EXISTS (SELECT 1 FROM vectors w WHERE w.hash = d.key)")]
    return orphans + superseded


def unembedded_docs(db: StoreBackend) -> bool:
    """A current document lacks a vector, or a vector is left that nothing needs."""
    if not db.has_table("embed_docs"):
        return False
    return bool(db.scalar(
        "SELECT 1 FROM embed_docs d WHERE d.current=1 AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash=d.key) "
        "AND EXISTS (SELECT 1 FROM chunks c WHERE c.hash=d.chunk_hash) LIMIT 1")) or bool(db.scalar(
        "SELECT 1 FROM vectors v JOIN embed_docs d ON d.chunk_hash = v.hash WHERE d.current=1 "
        "AND EXISTS (SELECT 1 FROM vectors w WHERE w.hash = d.key) LIMIT 1"))
