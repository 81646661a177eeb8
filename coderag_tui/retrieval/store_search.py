"""Hybrid search over any `StoreBackend` (what `--store postgresql://...` searches with):
keywords, vectors and symbol names, fused by reciprocal rank fusion at the unit level.

The SQLite index keeps its fuller searcher (`search.py`: routing, filters, refinement to inner
units, graph expansion); this one asks the store for ranked chunks and units only.
"""

from __future__ import annotations

import re

from coderag_tui.indexing.embedder import EmbeddingModel
from coderag_tui.models import SearchHit
from coderag_tui.retrieval.fusion import rrf
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.store.backend import ChunkHit, StoreBackend

_IDENTIFIER = re.compile(r"^[\w.:#/]+\(?\)?$")
LABELS = {"symbol": "symbol"}


def search(store: StoreBackend, query: str, k: int = 10, model: EmbeddingModel | None = None,
           rrf_k: int = 60) -> list[SearchHit]:
    """The `k` best units for a query, best first, each with the lists that found it."""
    text = query.strip()
    if not text or k <= 0:
        return []
    fetch = max(60, k * 3)
    lists: dict[str, list[int]] = {}
    spans: dict[int, ChunkHit] = {}

    def units_of(hits: list[ChunkHit]) -> list[int]:
        out = []
        for h in hits:
            if h.unit_id is not None:
                out.append(int(h.unit_id))
                spans.setdefault(int(h.unit_id), h)
        return out

    lists["bm25"] = units_of(store.keyword_search(query_terms(text), fetch))
    if model is not None:
        lists["vector"] = units_of(store.vector_search(model.query(text), model.id, fetch))
    if _IDENTIFIER.match(text):
        lists["symbol"] = [u.id for u in store.find_symbols(text, limit=k)]
    hits = []
    for fused in rrf(lists, k=rrf_k, labels=LABELS)[:k]:
        unit = store.get_unit(fused.key)
        if unit is None:
            continue
        span = spans.get(fused.key)
        hits.append(SearchHit(unit, fused.score, fused.reasons,
                              span.start_line if span else 0, span.end_line if span else 0))
    return hits
