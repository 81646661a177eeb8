"""Point a chunk match at the unit inside it that the query is about.

A chunk belongs to the innermost unit that contains all of it, so a chunk that merges a small
file, or several small methods, belongs to the file or the class. When units lie wholly inside
such a chunk, the match (and its line range) moves to the one whose name, signature, docstring and code share the
most query words (a word in the name counts three times), followed by up to two others that score nearly as
well; when no inner unit beats the chunk's own unit, the match stays put.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.store.db import Database

NAME_WEIGHT = 3.0
EXTRA_UNITS = 2  # other units of the same chunk that score nearly as well follow the best one
SHARE_OF_BEST = 0.75


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
            "AND start_line >= ? AND end_line <= ? AND kind <> 'file' AND id <> ? "
            "ORDER BY end_line - start_line, start_line",
            (m.file_id, m.start_line, m.end_line, m.unit_id))
        if not inner:
            out.append(m)
            continue
        lines = texts.get(m.chunk_id, "").split("\n")
        owner = db.one("SELECT name, kind FROM units WHERE id = ?", (m.unit_id,))
        owner_score = NAME_WEIGHT * len(_words(owner[0]) & wanted) if owner and owner[1] != "file" else 0.0
        scored: list[tuple[float, int, int, int]] = []
        for uid, name, sig, doc, start, end in inner:  # smallest first: it wins ties
            body = "\n".join(lines[start - m.start_line : end - m.start_line + 1])
            in_name = _words(name) & wanted
            other = _words(f"{sig}\n{doc}\n{body}") & wanted
            score = NAME_WEIGHT * len(in_name) + len(other - in_name)
            if score > owner_score:
                scored.append((score, int(uid), int(start), int(end)))
        if not scored:
            out.append(m)
            continue
        scored.sort(key=lambda s: -s[0])  # stable: the smaller unit stays first among equals
        top = scored[0][0]
        for score, uid, start, end in scored[: 1 + EXTRA_UNITS]:
            if score >= SHARE_OF_BEST * top:
                out.append(replace(m, unit_id=uid, start_line=start, end_line=end))
    return out + list(matches[limit:])
