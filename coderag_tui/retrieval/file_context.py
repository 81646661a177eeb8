"""File-level pieces for a question that asks for files ("which file handles X"): the outlines
of the best files of the file ranking that the context does not already quote lead it, in a
small share of its budget, so the answer can name files the unit hits alone would not show.
(A fixed share spent on every top file, shown or not, lowered the recall of such questions'
evidence: the code it displaced mattered more than outlines of files already quoted.)"""

from __future__ import annotations

import re
from collections.abc import Set

from coderag_tui.models import ContextPiece, SearchHit
from coderag_tui.retrieval.expansion import outline
from coderag_tui.retrieval.search import Searcher
from coderag_tui.tokens import TokenCounter

SHARE = 0.1  # of the context budget, for the file pieces together
FILES = 3  # the best files of the file ranking that get a piece
MIN_TOKENS = 40  # a file's piece smaller than this is not worth its header


def file_pieces(searcher: Searcher, query: str, budget: int, count: TokenCounter,
                shown: Set[str] = frozenset()) -> list[ContextPiece]:
    """Outline pieces of those of the best FILES files for `query` not in `shown`, within SHARE
    of `budget`; the pieces are in file-rank order."""
    room = int(budget * SHARE)
    if room < MIN_TOKENS:
        return []
    hits = [(rank, h) for rank, h in enumerate(searcher.search_files(query, k=FILES), 1)
            if h.unit.path not in shown]
    each = room // FILES  # one file never takes the others' share
    return [p for rank, hit in hits if (p := _piece(searcher, hit, rank, each, count))]


def _piece(searcher: Searcher, hit: SearchHit, rank: int, room: int, count: TokenCounter) -> ContextPiece | None:
    unit = hit.unit
    best = next((r[5:] for r in hit.reasons if r.startswith("best ")), "")
    title = f"file #{rank} for the question" + (f" (best match {best})" if best else "")
    lines = outline(searcher.db, unit).splitlines() or [f"{unit.kind} {unit.path}"]
    name = best.rsplit(".", 1)[-1]
    if name:  # the best-matching unit's line first: it is the last to go when the outline is cut
        lines.sort(key=lambda line: not re.search(rf"\b{re.escape(name)}\b", line))
    while lines:
        text = "\n".join(lines)
        tokens = count(text) + count(title) + 12  # the header and the fence
        if tokens <= room:
            return ContextPiece(unit.path, max(unit.start_line, 1), max(unit.end_line, 1), "file", title,
                                text, tokens, unit.language)
        lines = lines[:-1]
    return None
