"""Point a chunk match at the unit inside it that the query is about.

A chunk belongs to the innermost unit that contains all of it, so a chunk that merges a small
file, or several small methods, belongs to the file or the class. When units lie wholly inside
such a chunk, the match (and its line range) moves to the one whose name, signature, docstring and code share the
most query words (a word in the name counts three times), followed by up to two others that score nearly as
well; when no inner unit beats the chunk's own unit, the match stays put.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.store.db import Database

NAME_WEIGHT = 3.0
EXTRA_UNITS = 2  # other units of the same chunk that score nearly as well follow the best one
SHARE_OF_BEST = 0.75


_ALNUM = re.compile(r"[^\W_]+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _words(text: str) -> set[str]:
    """Lower-cased words and camelCase parts (what lexical.query_terms yields, stop words kept)."""
    return {w.lower() for w in _ALNUM.findall(text)} | {w.lower() for w in _PARTS.findall(text)}


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
    # every unit of the matched files, in one indexed query
    by_file: dict[int, list[tuple[int, str, str, str, int, int, str]]] = {}
    fids = sorted({m.file_id for m in head})
    for i in range(0, len(fids), 400):
        part = fids[i : i + 400]
        marks = ",".join("?" * len(part))
        for row in db.execute(
            f"SELECT file_id, id, name, signature, docstring, start_line, end_line, kind FROM units "
            f"WHERE file_id IN ({marks}) ORDER BY end_line - start_line, start_line", tuple(part)):
            by_file.setdefault(int(row[0]), []).append(tuple(row[1:]))
    out: list[ChunkMatch] = []
    for m in head:
        units = by_file.get(m.file_id, [])
        inner = [u for u in units if u[6] != "file" and u[0] != m.unit_id
                 and u[4] >= m.start_line and u[5] <= m.end_line]
        if not inner:
            out.append(m)
            continue
        lines = texts.get(m.chunk_id, "").split("\n")
        line_words: dict[int, set[str]] = {}  # words per line, shared by nested units
        owner = next((u for u in units if u[0] == m.unit_id), None)
        owner_score = NAME_WEIGHT * len(_words(owner[1]) & wanted) if owner and owner[6] != "file" else 0.0
        scored: list[tuple[float, int, int, int]] = []
        for uid, name, sig, doc, start, end, _kind in inner:  # smallest first: it wins ties
            in_name = _words(name) & wanted
            other = _words(f"{sig}\n{doc}") & wanted
            for i in range(max(start - m.start_line, 0), min(end - m.start_line + 1, len(lines))):
                words = line_words.get(i)
                if words is None:
                    words = line_words[i] = _words(lines[i]) & wanted
                other |= words
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
