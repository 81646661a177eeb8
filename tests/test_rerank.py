"""Reranking the top hits of hybrid search: the judge re-orders them, the rest stays."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from coderag_tui.answering.providers.local import LlamaProvider
from coderag_tui.answering.rerank_llm import llm_scorer, reranker_for
from coderag_tui.config import ProviderSettings, SearchSettings, Settings
from coderag_tui.errors import ConfigError
from coderag_tui.models import ChatMessage
from coderag_tui.retrieval.rerank import Reranker
from coderag_tui.retrieval.search import RERANK
from coderag_tui.service import CodeRag

FILES = {f"shop/part_{i}.py": f'''
def price_total_{i}(basket):
    """Add the prices of a basket, variant {i}."""
    return sum(item.price for item in basket) * {i}
''' for i in range(6)}
FILES["shop/ship.py"] = '''
def price_total_shipping(basket, courier):
    """Add the prices of a basket and the courier's fee."""
    return sum(item.price for item in basket) + courier.fee
'''
FILES["shop/cart.py"] = '''
from shop.ship import price_total_shipping


def checkout(basket, courier):
    return price_total_shipping(basket, courier)
'''


@pytest.fixture
def service(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(FILES))


def prefers(word: str) -> Callable[[str, Sequence[str]], list[float]]:
    return lambda query, passages: [1.0 if word in p else 0.0 for p in passages]


def test_reranker_reorders_the_top_and_keeps_the_rest(service: CodeRag) -> None:
    searcher = service.searcher()
    hybrid = searcher.search("add the prices of a basket", k=7, mode="hybrid").hits
    assert len(hybrid) == 7 and hybrid[0].unit.name != "price_total_shipping"
    searcher.reranker = Reranker(service.db, prefers("courier"), top=7)
    reranked = searcher.search("add the prices of a basket", k=7, mode=RERANK).hits
    assert reranked[0].unit.name == "price_total_shipping" and "rerank#1" in reranked[0].reasons
    # ties keep the fused order
    rest = [h.unit.id for h in hybrid if h.unit.name != "price_total_shipping"]
    assert [h.unit.id for h in reranked[1:]] == rest
    # only the top `top` hits are judged; the others keep their places
    seen: list[int] = []
    searcher.reranker = Reranker(service.db, lambda q, ps: seen.append(len(ps)) or [0.0] * len(ps), top=3)
    again = searcher.search("add the prices of a basket", k=7, mode=RERANK).hits
    assert seen == [3] and [h.unit.id for h in again] == [h.unit.id for h in hybrid]
    # the passage names the unit and shows its code
    passage = Reranker(service.db, prefers("x")).passage(hybrid[0], __import__(
        "coderag_tui.retrieval.source", fromlist=["CodeReader"]).CodeReader(service.db))
    assert passage.startswith(f"{hybrid[0].unit.path}: {hybrid[0].unit.qualname}") and "sum(" in passage
    # files rank as in hybrid mode; the graph's answers are not re-judged
    assert [h.unit.path for h in searcher.search_files("add the prices of a basket", mode=RERANK)] == \
        [h.unit.path for h in searcher.search_files("add the prices of a basket", mode="hybrid")]
    searcher.reranker = Reranker(service.db, lambda q, ps: [float(i) for i in range(len(ps))])
    graph = searcher.search("callers of price_total_shipping", mode=RERANK).hits
    assert graph[0].unit.name == "checkout" and graph[0].reasons[0] == "graph:callers"
    assert all(not r.startswith("rerank") for h in graph for r in h.reasons)


def test_a_judge_that_miscounts_is_an_error(service: CodeRag) -> None:
    searcher = service.searcher()
    searcher.reranker = Reranker(service.db, lambda q, ps: [1.0])
    with pytest.raises(ValueError, match="scored 1 of"):
        searcher.search("add the prices of a basket", mode=RERANK)


class DigitModel:
    """A provider that rates a passage 8 when it mentions the courier, else 2 (or no digit)."""

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float) -> Iterator[str]:
        self.calls.append(messages)
        text = messages[-1].content
        yield "Rating: 8" if "courier" in text else ("2" if "variant 1" in text else "none")


def test_llm_setting_reranks_through_the_configured_model(service: CodeRag) -> None:
    assert service.reranker() is None and service.searcher().default_mode == "hybrid"
    model = DigitModel()
    loads: list[int] = []
    reranker = reranker_for(service.db, "llm", 5, lambda: loads.append(1) or model)
    assert reranker is not None and loads == []  # nothing is loaded before the first judgement
    scores = reranker.scorer("add prices", ["def f(courier): ...", "variant 1", "other"])
    assert list(scores) == [8.0, 2.0, 0.0] and loads == [1] and len(model.calls) == 3
    assert "Question: add prices" in model.calls[0][-1].content
    with pytest.raises(ConfigError, match="search.rerank must be off or llm"):
        reranker_for(service.db, "cross-encoder", 5, lambda: model)
    llm_service = dataclasses.replace(Settings(), search=dataclasses.replace(SearchSettings(), rerank="llm"))
    service.settings = llm_service
    assert service.searcher().default_mode == RERANK and service.searcher().reranker is not None


@pytest.mark.usefixtures("bundled_gguf")
def test_the_bundled_model_gives_a_rating_per_passage() -> None:
    provider = LlamaProvider(ProviderSettings(n_ctx=2048))
    scores = llm_scorer(provider)("add the prices of a basket", [FILES["shop/ship.py"], "import os\n"])
    assert len(scores) == 2 and all(0.0 <= s <= 9.0 for s in scores)
