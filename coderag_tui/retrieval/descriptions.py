"""Search over descriptions: file profiles' roles and docstring sentences, and model summaries.

A question in a user's words often shares no word with the code that answers it; a summary's
words can. The ranked units join the hybrid search's fusion as one more list (`summary`).
"""

from __future__ import annotations

from coderag_tui.models import SearchFilters
from coderag_tui.retrieval.lexical import query_terms
from coderag_tui.store.backend import StoreBackend

WEIGHT_SHARE = 0.5  # of the BM25 list's weight: a description is a paraphrase, the code is the truth
MAX_TERMS = 40


def description_units(db: StoreBackend, query: str, limit: int,
                      filters: SearchFilters | None = None) -> list[int]:
    """Unit ids whose description matches the query's words, best first. (The words are not
    those kept for the chunks: a summary's point is the words the code does not have.)"""
    terms = query_terms(query, MAX_TERMS)
    if not terms or (filters is not None and filters.kind):
        return []
    return db.description_search(terms, limit, filters)
