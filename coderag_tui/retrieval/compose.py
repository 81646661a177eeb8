"""Compose the context for a question: search, expand the top hits, pack into the budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from coderag_tui.config import ContextSettings
from coderag_tui.models import ComposedContext, ContextPiece, SearchHit
from coderag_tui.retrieval.expansion import MemoReads, SimilarFn, expand
from coderag_tui.retrieval.file_context import file_pieces
from coderag_tui.retrieval.focus import question_stems
from coderag_tui.retrieval.intent import is_file_question
from coderag_tui.retrieval.packing import TokenCounter, estimate_tokens, pack, shares_for
from coderag_tui.retrieval.router import question_kind
from coderag_tui.retrieval.search import Searcher
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.retrieval.strategies import select
from coderag_tui.store.backend import ContextReads, StoreBackend
from coderag_tui.store.retrieval_reads import context_reads


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

    def files(allowance: int, shown: set[str]) -> list[ContextPiece]:
        return file_pieces(searcher, query, allowance, count, shown)

    return assemble(searcher.db, hits, query, result.route.kind, settings, budget, root, count, similar,
                    files if is_file_question(query) else None)


def assemble(
    source: StoreBackend | ContextReads,
    hits: Sequence[SearchHit],
    query: str,
    route: str,
    settings: ContextSettings,
    budget: int,
    root: Path | None = None,
    count: TokenCounter = estimate_tokens,
    similar: SimilarFn | None = None,
    files: Callable[[int, set[str]], list[ContextPiece]] | None = None,
) -> ComposedContext:
    """The context around `hits` (already in the strategy's order) on any store: expansion,
    then packing into `budget` tokens for the kind of question; `files(budget, paths shown)`,
    when given, gives file outlines that lead it."""
    reads = MemoReads(context_reads(source))
    reader = CodeReader(reads, root)
    candidates = expand(reads, reader, hits, settings, similar, question_stems(query))
    kind = question_kind(query)
    shares = shares_for(kind, settings)
    pieces = pack(candidates, budget, shares, count)
    if files is not None:  # the best files the context does not show yet lead it
        leading = files(budget, {p.path for p in pieces})
        if leading:
            pieces = [*leading, *pack(candidates, budget - sum(p.tokens for p in leading), shares, count)]
    return ComposedContext(
        query=query,
        route=route,
        pieces=tuple(pieces),
        tokens=sum(p.tokens for p in pieces),
        budget=budget,
        hits=tuple(hits),
        kind=kind,
    )
