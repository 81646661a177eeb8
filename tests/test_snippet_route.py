"""The similarity route's postings budget: beside its vector, a pasted snippet is matched by
BM25 on its rarest words within SNIPPET_POSTINGS; without vectors, and on other routes, BM25
keeps the whole budget. A real index of a fixture repository; the query embedder gives no
vector (the model is exercised in test_embedder.py), so the vector branch runs and finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.retrieval import lexical, router, search
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag

FILES: dict[str, str | bytes] = {
    "shop/tax.py": '''def apply_vat(amount, rate):
    """Add value added tax to an amount."""
    levy = amount * rate
    return amount + levy
''',
    "shop/discount.py": '''def discount(amount, rate):
    """Take a share off an amount."""
    return amount - amount * rate


def rebate(amount, rate, cap):
    """Give some of an amount back, at most the cap."""
    return min(amount * rate, cap)
''',
    "shop/fees.py": '''def card_fee(amount, rate):
    """What the card company keeps of an amount."""
    return round(amount * rate, 2)
''',
}
SNIPPET = "def add_vat(amount, rate):\n    levy = amount * rate\n    return amount + levy\n"


@pytest.fixture
def shop(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(FILES))


def test_informative_terms_take_a_postings_budget(shop: CodeRag) -> None:
    words = ["amount", "rate", "levy"]
    df, _ = lexical.doc_freqs(shop.db, words)
    assert df["levy"] < df["rate"] <= df["amount"]
    assert lexical.informative_terms(shop.db, words) == words  # the default budget holds them all
    assert lexical.informative_terms(shop.db, words, postings=df["levy"]) == ["levy"]
    assert lexical.informative_terms(shop.db, words, postings=0) == ["levy"]  # the rarest always


def test_similarity_route_matches_the_rarest_words(shop: CodeRag, monkeypatch: pytest.MonkeyPatch) -> None:
    assert router.classify(SNIPPET).kind == router.SIMILARITY
    matched: list[list[str]] = []
    bm25 = lexical.bm25_chunks

    def recording(db: Any, query: str, *args: Any, terms: Sequence[str] | None = None, **kw: Any) -> Any:
        if terms is not None:
            matched.append(list(terms))
        return bm25(db, query, *args, terms=terms, **kw)

    monkeypatch.setattr(lexical, "bm25_chunks", recording)
    monkeypatch.setattr(search, "SNIPPET_POSTINGS", 0)
    searcher = Searcher(shop.db, shop.settings.search, lambda text: None)
    hits = searcher.search(SNIPPET).hits
    df, _ = lexical.doc_freqs(shop.db, lexical.query_terms(SNIPPET))
    assert len(matched[0]) == 1 and df[matched[0][0]] == min(df.values())  # a rarest word only
    assert hits[0].unit.qualname == "apply_vat"

    matched.clear()
    searcher.search("how is the value added tax added to an amount")
    assert "amount" in matched[0] and len(matched[0]) > 1  # other routes: the whole budget
    matched.clear()
    assert Searcher(shop.db, shop.settings.search).search(SNIPPET).hits[0].unit.qualname == "apply_vat"
    assert len(matched[0]) > 1  # keywords alone: the whole budget
