"""Hybrid search's signals are one table (coderag_tui/retrieval/signals.py): which lists each
route fuses, and with what weight."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.config import SearchSettings
from coderag_tui.retrieval import router, signals
from coderag_tui.service import CodeRag


def test_each_route_runs_its_rows_of_the_table() -> None:
    assert [s.name for s in signals.for_route(router.SYMBOL)] == ["symbol", "fuzzy"]
    assert signals.for_route(router.SIMILARITY) == []  # it only re-weighs vectors and keywords
    for kind in (router.SEMANTIC, router.STRUCTURAL):
        assert [s.name for s in signals.for_route(kind)] == ["symbol", "name", "trace"]


def test_weights_are_shares_of_the_configured_weights() -> None:
    settings = SearchSettings()
    exact, fuzzy = signals.for_route(router.SYMBOL)
    q = None  # (these two rows do not depend on the query)
    assert exact.weight_of(settings, q) == pytest.approx(settings.weight_symbol * 2)  # type: ignore[arg-type]
    assert fuzzy.weight_of(settings, q) == pytest.approx(settings.weight_symbol * 0.5)  # type: ignore[arg-type]
    assert signals.REWEIGHT[router.SIMILARITY]["vector"] == ("weight_vector", 2.0)


def test_the_search_fuses_the_lists_the_table_names(make_repo, tmp_path: Path) -> None:
    repo = make_repo({"shop/tax.py": "def tax_for(amount):\n    return amount * 0.2\n",
                      "shop/cart.py": "from shop.tax import tax_for\n\n\ndef cart_total(items):\n"
                                      "    return sum(items) + tax_for(sum(items))\n"})
    from coderag_tui.config import EmbedSettings, Settings

    service = CodeRag(repo, Settings(embed=EmbedSettings(enabled=False)), tmp_path / "i.db")
    try:
        service.index()
        searcher = service.searcher()
        ranked = searcher._rank("tax_for", router.classify("tax_for"), 10, None, "hybrid")
        assert {"symbol", "fuzzy"} <= set(ranked.lists) and "name" not in ranked.lists
        question = "where is the cart total computed"
        ranked = searcher._rank(question, router.classify(question), 10, None, "hybrid")
        assert {"symbol", "name"} <= set(ranked.lists) and "fuzzy" not in ranked.lists
    finally:
        service.close()
