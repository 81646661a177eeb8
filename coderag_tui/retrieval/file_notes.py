"""File descriptions at the end of a composed context: for each file the context quotes, its
summary (when a model made one, named with it; never the tiny default model's guess) or else
its profile, in what the packing left of the budget and no more than a small share of it."""

from __future__ import annotations

from dataclasses import replace

from coderag_tui.models import ComposedContext, ContextPiece, by_tiny_model, summary_label
from coderag_tui.retrieval.packing import TokenCounter
from coderag_tui.store import descriptions as store
from coderag_tui.store.backend import StoreBackend

SHARE = 0.08  # of the context budget, at most
MAX_FILES = 6
NOTE_CHARS = 480


def with_file_notes(db: StoreBackend, context: ComposedContext, count: TokenCounter) -> ComposedContext:
    room = min(context.budget - context.tokens, int(context.budget * SHARE))
    paths = list(dict.fromkeys(p.path for p in context.pieces if p.role != "metadata"))[:MAX_FILES]
    if room <= 0 or not paths or not db.has_table("profiles"):
        return context
    notes: list[ContextPiece] = []
    for path in paths:
        profile, summaries = store.file_descriptions(db, path)
        head = store.file_head(db, path)
        if head is None:
            continue
        summary, model = summaries.get(head[0], ("", ""))
        text = f"{summary} ({summary_label(model)})" if summary and not by_tiny_model(model) else profile
        if not text:
            continue
        text = text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"
        tokens = count(text) + 12
        if tokens > room:
            break
        room -= tokens
        notes.append(ContextPiece(path, 1, max(head[1], 1), "metadata", "about this file", text, tokens))
    if not notes:
        return context
    return replace(context, pieces=(*context.pieces, *notes), tokens=context.tokens + sum(n.tokens for n in notes))
