"""Point a chunk match at the unit inside it that the query is about.

A chunk belongs to the innermost unit that contains all of it, so a chunk that merges a small
file, or several small methods, belongs to the file or the class. When units lie wholly inside
such a chunk, the match moves to the one whose name, signature, docstring and code share the
most query words (a word in the name counts three times); with no shared word it stays put.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.store.db import Database

NAME_WEIGHT = 3.0


def _words(text: str) -> set[str]:
    return set(query_terms(text, limit=1_000_000))


def refine(db: Database, matches: Sequence[ChunkMatch], terms: Sequence[str], limit: int = 200) -> list[ChunkMatch]:
    wanted = set(terms)
    if not wanted or not matches:
        return list(matches)
    head = list(matches[:limit])
    ids = [m.chunk_id for m in head]
    texts: dict[int, str] = {}
    for i in range(0, len(ids), 400):
        part = ids[i : i + 400]
        marks = ",".join("?" * len(part))
        texts.update((int(cid), str(t)) for cid, t in db.execute(
            f"SELECT id, text FROM chunks WHERE id IN ({marks})", tuple(part)))
    out: list[ChunkMatch] = []
    for m in head:
        inner = db.rows(
            "SELECT id, name, signature, docstring, start_line, end_line FROM units WHERE file_id = ? "
            "AND start_line >= ? AND end_line <= ? AND kind <> 'file' AND id <> ?",
            (m.file_id, m.start_line, m.end_line, m.unit_id))
        if not inner:
            out.append(m)
            continue
        lines = texts.get(m.chunk_id, "").split("\n")
        owner = db.one("SELECT name, kind FROM units WHERE id = ?", (m.unit_id,))
        owner_score = NAME_WEIGHT * len(_words(owner[0]) & wanted) if owner and owner[1] != "file" else 0.0
        best, best_score = m.unit_id, owner_score
        for uid, name, sig, doc, start, end in inner:
            body = "\n".join(lines[start - m.start_line : end - m.start_line + 1])
            in_name = _words(name) & wanted
            other = _words(f"{sig}\n{doc}\n{body}") & wanted
            score = NAME_WEIGHT * len(in_name) + len(other - in_name)
            if score > best_score:
                best, best_score = int(uid), score
        out.append(replace(m, unit_id=best) if best != m.unit_id else m)
    return out + list(matches[limit:])
