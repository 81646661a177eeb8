"""Point a chunk match at the unit inside it that the query is about.

A chunk belongs to the innermost unit that contains all of it, so a chunk that merges a small
file, or several small methods, belongs to the file or the class. When units lie wholly inside
such a chunk, the match (and its line range) moves to the one whose name, signature, docstring and code share the
most query words (a word in the name counts three times), followed by up to two others that score nearly as
well; when no inner unit beats the chunk's own unit, the match stays put.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import replace

from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.store.db import Database

NAME_WEIGHT = 3.0
_BIG = 1 << 62
EXTRA_UNITS = 2  # other units of the same chunk that score nearly as well follow the best one
SHARE_OF_BEST = 0.75


_ALNUM = re.compile(r"[^\W_]+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@functools.lru_cache(maxsize=65536)
def _words(text: str) -> frozenset[str]:
    """Lower-cased words and camelCase parts (what lexical.query_terms yields, stop words kept)."""
    return frozenset(w.lower() for w in _ALNUM.findall(text)) | {w.lower() for w in _PARTS.findall(text)}


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
    # the spans of every unit of the matched files (one indexed query), sorted by start line
    spans: dict[int, list[tuple[int, int, int, str]]] = {}  # file -> (start, end, id, kind)
    fids = sorted({m.file_id for m in head})
    for i in range(0, len(fids), 400):
        part = fids[i : i + 400]
        marks = ",".join("?" * len(part))
        for fid, uid, start, end, kind in db.execute(
            f"SELECT file_id, id, start_line, end_line, kind FROM units WHERE file_id IN ({marks}) "
            f"ORDER BY file_id, start_line", tuple(part)):
            spans.setdefault(int(fid), []).append((int(start), int(end), int(uid), str(kind)))
    inner_of: dict[int, list[tuple[int, int, int, str]]] = {}
    for m in head:
        units = spans.get(m.file_id, [])
        first = bisect.bisect_left(units, (m.start_line, -1, -1, ""))
        last = bisect.bisect_right(units, (m.end_line, _BIG, _BIG, "~"))
        inner_of[m.chunk_id] = [u for u in units[first:last]
                                if u[1] <= m.end_line and u[3] != "file" and u[2] != m.unit_id]
    # names, signatures and docstrings only of the units that matter
    wanted_ids = sorted({u[2] for us in inner_of.values() for u in us} | {m.unit_id for m in head})
    info: dict[int, tuple[str, str, str, str]] = {}
    for i in range(0, len(wanted_ids), 400):
        part = wanted_ids[i : i + 400]
        marks = ",".join("?" * len(part))
        for uid, name, sig, doc, kind in db.execute(
            f"SELECT id, name, signature, docstring, kind FROM units WHERE id IN ({marks})", tuple(part)):
            info[int(uid)] = (str(name), str(sig), str(doc), str(kind))
    out: list[ChunkMatch] = []
    for m in head:
        inner = sorted(inner_of[m.chunk_id], key=lambda u: (u[1] - u[0], u[0]))
        if not inner:
            out.append(m)
            continue
        # the lines (0-based, in the chunk) where each query word occurs
        where: dict[str, list[int]] = {}
        for i, line in enumerate(texts.get(m.chunk_id, "").split("\n")):
            for w in _words(line) & wanted:
                where.setdefault(w, []).append(i)
        owner = info.get(m.unit_id)
        owner_score = NAME_WEIGHT * len(_words(owner[0]) & wanted) if owner and owner[3] != "file" else 0.0
        scored: list[tuple[float, int, int, int]] = []
        for start, end, uid, _kind in inner:  # smallest first: it wins ties
            name, sig, doc, _ = info.get(uid, ("", "", "", ""))
            in_name = _words(name) & wanted
            other = set(_words(f"{sig}\n{doc}") & wanted)
            a, b = start - m.start_line, end - m.start_line
            other.update(w for w, rows in where.items() if bisect.bisect_right(rows, b) > bisect.bisect_left(rows, a))
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
