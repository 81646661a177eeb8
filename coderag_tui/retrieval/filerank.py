"""File ranking that adds up a file's evidence: several matching chunks beat one.

`search_files` fuses each retriever's files, a file ranking at its best unit; a bug report or a
question about a module matches many places of the file to change, which a best-unit ranking
cannot see. This list ranks files by the BM25 scores of their chunks among the top matches, the
j-th best chunk of a file counting DECAY**j of its score, so one strong chunk still counts most.

A pasted report describes one problem, usually in one file: in unit search, BM25's units are
also listed by their file's rank (`units_by_file`). A question may span files, so a one-line
question does without that list (on the SWE-QA questions it lowered the context's recall).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coderag_tui.models import UnitRef

DECAY = 0.5  # the j-th best chunk of a file (from 0) counts DECAY**j of its score
SHARE = 1.0  # of weight_bm25, for this list in the file fusion
UNIT_SHARE = 1.0  # of weight_bm25, for BM25's units reordered by their file's rank (reports only)
REPORT_WORDS = 30  # a query of several lines and at least this many words is a report, not a question
POOL = 4  # chunks read: this many times the file candidates


def aggregate(matches: Sequence[tuple[str, float]]) -> list[str]:
    """Paths, best first, by the decayed sum of their chunks' scores ((path, score), best first)."""
    total: dict[str, float] = {}
    seen: dict[str, int] = {}
    for path, score in matches:
        j = seen.get(path, 0)
        seen[path] = j + 1
        total[path] = total.get(path, 0.0) + max(score, 0.0) * DECAY**j
    return sorted(total, key=lambda p: -total[p])


def is_report(query: str) -> bool:
    """A pasted issue or bug report (several lines, many words), not a one-line question: the
    code it is about is mostly in one file, so its units rank by their file's evidence too."""
    return "\n" in query.strip() and len(query.split()) >= REPORT_WORDS


def units_by_file(order: Sequence[int], units: Mapping[int, UnitRef],
                  matches: Sequence[tuple[str, float]]) -> list[int]:
    """BM25's units (`order`, best first) reordered by their file's aggregate rank, then their own."""
    file_rank = {p: i for i, p in enumerate(aggregate(matches))}
    known = [u for u in order if u in units]
    return sorted(known, key=lambda u: file_rank.get(units[u].path, len(file_rank)))
