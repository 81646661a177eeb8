"""File ranking that adds up a file's evidence: several matching chunks beat one.

`search_files` fuses each retriever's files, a file ranking at its best unit; a bug report or a
question about a module matches many places of the file to change, which a best-unit ranking
cannot see. This list ranks files by the BM25 scores of their chunks among the top matches, the
j-th best chunk of a file counting DECAY**j of its score, so one strong chunk still counts most.
"""

from __future__ import annotations

from collections.abc import Sequence

DECAY = 0.5  # the j-th best chunk of a file (from 0) counts DECAY**j of its score
SHARE = 1.0  # of weight_bm25, for this list in the file fusion
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
