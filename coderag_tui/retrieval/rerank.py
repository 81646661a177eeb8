"""Reranking: a second, slower judge re-orders the top hits of hybrid search.

The judge is a scorer, `score(query, passages) -> relevance per passage` (higher is better):
a cross-encoder or a language model (`answering/rerank_llm.py`). It sees each hit's best
chunk (or the start of the unit) under a line naming its path and unit. Hits below the top
`top` keep their place; ties keep the fused order, so a judge that cannot tell leaves the
ranking as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from coderag_tui.models import SearchHit
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.store.backend import StoreBackend

Scorer = Callable[[str, Sequence[str]], Sequence[float]]
PASSAGE_LINES = 40
PASSAGE_CHARS = 1500


class Reranker:
    def __init__(self, db: StoreBackend, scorer: Scorer, top: int = 10) -> None:
        self.db = db
        self.scorer = scorer
        self.top = top

    def passage(self, hit: SearchHit, reader: CodeReader) -> str:
        u = hit.unit
        start = hit.chunk_start or u.start_line
        end = min(hit.chunk_end or u.end_line, start + PASSAGE_LINES - 1)
        head = f"{u.path}: {u.qualname or u.name} ({u.kind})"
        return (head + "\n" + reader.text(u.path, start, end))[:PASSAGE_CHARS]

    def __call__(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        head = list(hits[: self.top])
        if len(head) < 2:
            return list(hits)
        reader = CodeReader(self.db)
        scores = list(self.scorer(query, [self.passage(h, reader) for h in head]))
        if len(scores) != len(head):
            raise ValueError(f"the reranker scored {len(scores)} of {len(head)} passages")
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        ranked = [dataclasses.replace(head[i], reasons=(*head[i].reasons, f"rerank#{r + 1}"))
                  for r, i in enumerate(order)]
        return ranked + list(hits[self.top :])
