"""The answer cache's rows, and the fingerprint of a cited range of the index.

A range's fingerprint is a hash of the content hashes of the chunks that overlap it (the file's
hash when no chunk does): re-indexing an edited unit changes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from coderag_tui.store.backend import StoreBackend

MAX_ENTRIES = 500  # per index; the oldest go first


@dataclass(frozen=True)
class CacheRow:
    id: int
    question: str
    norm: str
    embed_model: str
    vector: bytes | None
    answer: str
    sources: str  # JSON
    invalid: str  # JSON
    cited: list[tuple[str, int, int, str]]  # path, start, end, fingerprint
    created: float


def range_fingerprint(db: StoreBackend, path: str, start: int, end: int) -> str:
    rows = db.rows(
        "SELECT c.start_line, c.end_line, c.hash FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? ORDER BY c.start_line, c.id",
        (path, end, start),
    )
    if not rows:
        file_hash = db.scalar("SELECT hash FROM files WHERE path=?", (path,))
        if file_hash is None:
            return "missing"
        rows = [("file", file_hash)]
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def candidates(db: StoreBackend, model: str) -> list[CacheRow]:
    out = []
    for r in db.rows(
        "SELECT id, question, norm, embed_model, vector, answer, sources, invalid, cited, created "
        "FROM answer_cache WHERE model=? ORDER BY id DESC LIMIT ?",
        (model, MAX_ENTRIES),
    ):
        try:
            cited = [(str(p), int(s), int(e), str(f)) for p, s, e, f in json.loads(r[8])]
        except (ValueError, TypeError):
            cited = []
        out.append(CacheRow(int(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], str(r[5]), str(r[6]),
                            str(r[7]), cited, float(r[9])))
    return out


def put(db: StoreBackend, model: str, question: str, norm: str, embed_model: str, vector: bytes | None,
        answer: str, sources: list[dict[str, Any]], checks_json: str,
        cited: list[tuple[str, int, int]]) -> int:
    """Keep an answer; `checks_json`: what was checked in it, as the answerer encodes it."""
    with db.transaction():
        marked = [(p, s, e, range_fingerprint(db, p, s, e)) for p, s, e in cited]
        db.execute("DELETE FROM answer_cache WHERE model=? AND norm=?", (model, norm))
        new_id = int(db.scalar(
            "INSERT INTO answer_cache(model, question, norm, embed_model, vector, answer, sources, "
            "invalid, cited, created) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (model, question, norm, embed_model, vector, answer, json.dumps(sources), checks_json,
             json.dumps(marked), time.time()),
        ))
        db.execute("DELETE FROM answer_cache WHERE id NOT IN "
                   "(SELECT id FROM answer_cache ORDER BY id DESC LIMIT ?)", (MAX_ENTRIES,))
    return new_id


def delete(db: StoreBackend, entry_id: int) -> None:
    with db.transaction():
        db.execute("DELETE FROM answer_cache WHERE id=?", (entry_id,))
