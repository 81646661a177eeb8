"""Hybrid search over any `StoreBackend` (what `--store postgresql://...` searches with):
keywords, vectors and symbol names, fused by reciprocal rank fusion at the unit level.

The SQLite index keeps its fuller searcher (`search.py`: routing, filters, refinement to inner
units, graph expansion); this one asks the store for ranked chunks and units only. Context
around the hits is composed by `compose.assemble`, as for the SQLite index.
"""

from __future__ import annotations

import re
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import EmbeddingModel
from coderag_tui.models import ComposedContext, SearchHit
from coderag_tui.retrieval.fusion import rrf
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.store.backend import ChunkHit, StoreBackend
from coderag_tui.tokens import TokenCounter, estimate_tokens

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
        # exact, case-insensitive and prefix: index ranges; the part and letters-in-order
        # levels read every unit name (seconds at 500,000 chunks)
        lists["symbol"] = [u.id for u in store.find_symbols(text, limit=k, fuzzy=False)]
    hits = []
    for fused in rrf(lists, k=rrf_k, labels=LABELS)[:k]:
        unit = store.get_unit(fused.key)
        if unit is None:
            continue
        span = spans.get(fused.key)
        hits.append(SearchHit(unit, fused.score, fused.reasons,
                              span.start_line if span else 0, span.end_line if span else 0))
    return hits


def context(store: StoreBackend, query: str, settings: Settings, max_tokens: int | None = None,
            root: Path | None = None, count: TokenCounter = estimate_tokens,
            model: EmbeddingModel | None = None, strategy: str = "relevance") -> ComposedContext:
    """The context for `query` on any store: this module's hits, ordered by the strategy, then
    the one composition (expansion and packing) the SQLite index's context uses too."""
    from coderag_tui.retrieval.compose import assemble
    from coderag_tui.retrieval.strategies import select

    budget = max(int(settings.context.max_tokens if max_tokens is None else max_tokens), 0)
    k = max(settings.context.primary_results, settings.search.k)
    hits = select(store, search(store, query, k, model, settings.search.rrf_k), strategy,
                  settings.context.primary_results)
    return assemble(store, hits, query, "hybrid", settings.context, budget, root, count)
