"""Compose the context for a question: search, expand the top hits, pack into the budget."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.config import ContextSettings
from coderag_tui.models import ComposedContext
from coderag_tui.retrieval.expansion import SimilarFn, expand
from coderag_tui.retrieval.file_context import file_pieces
from coderag_tui.retrieval.focus import question_stems
from coderag_tui.retrieval.intent import is_file_question
from coderag_tui.retrieval.packing import TokenCounter, estimate_tokens, pack, shares_for
from coderag_tui.retrieval.router import question_kind
from coderag_tui.retrieval.search import Searcher
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.retrieval.strategies import select


def compose(
    searcher: Searcher,
    query: str,
    settings: ContextSettings,
    max_tokens: int | None = None,
    root: Path | None = None,
    count: TokenCounter = estimate_tokens,
    similar: SimilarFn | None = None,
    strategy: str = "relevance",
) -> ComposedContext:
    """The context for `query` within `max_tokens` (default: [context] max_tokens); the kind of
    question (lookup, architecture, debugging) weights the budget's tiers; `strategy` (see
    retrieval/strategies.py) chooses which hits the context is built around. A question that asks
    for files (retrieval/intent.py) starts with the outlines of the file ranking's best files that it would not show."""
    budget = max(int(settings.max_tokens if max_tokens is None else max_tokens), 0)
    result = searcher.search(query, k=max(settings.primary_results, searcher.settings.k))
    hits = select(searcher.db, result.hits, strategy, settings.primary_results)
    reader = CodeReader(searcher.db, root)
    candidates = expand(searcher.db, reader, hits, settings, similar, question_stems(query))
    kind = question_kind(query)
    shares = shares_for(kind, settings)
    pieces = pack(candidates, budget, shares, count)
    if is_file_question(query):  # the best files the context does not show yet lead it
        files = file_pieces(searcher, query, budget, count, {p.path for p in pieces})
        if files:
            pieces = [*files, *pack(candidates, budget - sum(p.tokens for p in files), shares, count)]
    return ComposedContext(
        query=query,
        route=result.route.kind,
        pieces=tuple(pieces),
        tokens=sum(p.tokens for p in pieces),
        budget=budget,
        hits=tuple(hits),
        kind=kind,
    )
