"""LLM reranking: the configured chat model judges each of the top hits.

No cross-encoder whose weights install offline from a package registry was found (see
docs/retrieval.md), so the judge is the model that answers questions: for each passage it is
asked for one digit, 0 (unrelated) to 9 (exactly what was asked). Pointwise, one short call per
passage, so any chat model works, local or remote; a reply with no digit scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from coderag_tui.errors import ConfigError
from coderag_tui.models import ChatMessage
from coderag_tui.retrieval.rerank import Reranker, Scorer
from coderag_tui.store.backend import StoreBackend

SYSTEM = ("You rate search results of a code search. Reply with a single digit from 0 to 9: how well "
          "the code answers the question (9: it is exactly the code asked about, 0: unrelated).")


def llm_scorer(provider: Any) -> Scorer:
    """A scorer that asks `provider` (an answering provider: `stream(messages, ...)`)."""

    def score(query: str, passages: Sequence[str]) -> list[float]:
        out: list[float] = []
        for passage in passages:
            messages = [ChatMessage("system", SYSTEM),
                        ChatMessage("user", f"Question: {query}\n\nCode:\n{passage}\n\nRating (0-9):")]
            reply = "".join(provider.stream(messages, max_tokens=3, temperature=0.0))
            m = re.search(r"\d", reply)
            out.append(float(m.group()) if m else 0.0)
        return out

    return score


def reranker_for(db: StoreBackend, setting: str, top: int, provider: Callable[[], Any]) -> Reranker | None:
    """The reranker a `[search] rerank` setting names: None for "off"; for "llm" the provider
    (`provider()`, called on the first judgement, so a search that never reranks loads no model)."""
    if setting == "off":
        return None
    if setting != "llm":
        raise ConfigError(f"config: search.rerank must be off or llm, got {setting!r}")
    loaded: list[Any] = []

    def score(query: str, passages: Sequence[str]) -> Sequence[float]:
        if not loaded:
            loaded.append(provider())
        return llm_scorer(loaded[0])(query, passages)

    return Reranker(db, score, top)
