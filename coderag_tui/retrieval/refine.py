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
from coderag_tui.store import retrieval_reads
from coderag_tui.store.backend import StoreBackend

NAME_WEIGHT = 3.0
EXTRA_UNITS = 2  # other units of the same chunk that score nearly as well follow the best one
SHARE_OF_BEST = 0.75


_ALNUM = re.compile(r"[^\W_]+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@functools.lru_cache(maxsize=65536)
def _words(text: str) -> frozenset[str]:
    """Lower-cased words and camelCase parts (what lexical.query_terms yields, stop words kept)."""
    return frozenset(w.lower() for w in _ALNUM.findall(text)) | {w.lower() for w in _PARTS.findall(text)}


def _present(text: str, wanted: set[str]) -> set[str]:
    """The wanted words that occur in the text as substrings (a cheap superset of its words)."""
    low = text.lower()
    return {w for w in wanted if w in low}


def refine(db: StoreBackend, matches: Sequence[ChunkMatch], terms: Sequence[str], limit: int = 200) -> list[ChunkMatch]:
    wanted = set(terms)
    if not wanted or not matches:
        return list(matches)
    head = list(matches[:limit])
    # the chunks' code, the units wholly inside each matched chunk and the names, signatures and
    # docstrings of those and of the chunks' own units: one read
    spans = list({m.chunk_id: m for m in head}.values())
    texts, inside, info = retrieval_reads.refine_rows(
        db, [(m.chunk_id, m.file_id, m.start_line, m.end_line, m.unit_id) for m in spans])
    inner_of: dict[int, list[tuple[int, int, int, str]]] = {m.chunk_id: [] for m in head}
    unit_of = {m.chunk_id: m.unit_id for m in head}
    for cid, uid, start, end, kind in inside:
        if uid != unit_of[cid]:
            inner_of[cid].append((start, end, uid, kind))
    # (a chunk matched twice, for two units: the other unit's brief)
    missing = sorted({m.unit_id for m in head} - {m.unit_id for m in spans})
    if missing:
        info.update(retrieval_reads.unit_briefs(db, missing))
    out: list[ChunkMatch] = []
    for m in head:
        inner = sorted(inner_of[m.chunk_id], key=lambda u: (u[1] - u[0], u[0]))
        if not inner:
            out.append(m)
            continue
        # the lines (0-based, in the chunk) where each query word occurs
        where: dict[str, list[int]] = {}
        text = texts.get(m.chunk_id, "")
        present = _present(text, wanted)
        if present:
            for i, line in enumerate(text.split("\n")):
                low = line.lower()
                if any(w in low for w in present):
                    for w in _words(line) & present:
                        where.setdefault(w, []).append(i)
        owner = info.get(m.unit_id)
        owner_score = NAME_WEIGHT * len(_words(owner[0]) & wanted) if owner and owner[3] != "file" else 0.0
        scored: list[tuple[float, int, int, int]] = []
        for start, end, uid, _kind in inner:  # smallest first: it wins ties
            name, sig, doc, _ = info.get(uid, ("", "", "", ""))
            in_name = _words(name) & wanted
            other = set(_words(f"{sig}\n{doc}") & wanted) if _present(sig + doc, wanted) else set()
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
