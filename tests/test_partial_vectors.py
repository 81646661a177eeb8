"""Hybrid search over a partly embedded index: the KNN ranks only the chunks that have a vector,
so its first hits are the nearest of a few, not strong matches, and fused at their plain rank
they pushed the keywords' hits out of the top. The vector list's ranks are stretched by the
embedded share (i -> i / share); a fully embedded index fuses exactly as before.

A real index of a fixture repository; the vectors are written by hand (the model is exercised
in test_embedder.py) and the query embedder returns a fixed vector, near the few embedded chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.models import SearchHit
from coderag_tui.retrieval import router, vector
from coderag_tui.retrieval.fusion import rrf
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag

DIM = 8
QUERY = "ledger balance reconcile"


def _repo() -> dict[str, str | bytes]:
    """Twelve functions the query's words find (ranked by how often they say them), and
    twenty-eight that never say them."""
    files: dict[str, str | bytes] = {}
    for i in range(12):
        words = " ".join(["ledger balance reconcile"] * (12 - i))
        files[f"books/ledger_{i:02d}.py"] = (
            f"def ledger_step_{i:02d}(entries):\n    \"\"\"{words}\"\"\"\n    return entries[{i}]\n")
    for i in range(28):
        files[f"misc/other_{i:02d}.py"] = (
            f"def other_thing_{i:02d}(value):\n    \"\"\"Paint the fence number {i}.\"\"\"\n"
            f"    return value * {i + 2}\n")
    return files


def _embed(service: CodeRag, hashes: Sequence[str], near: Sequence[str]) -> None:
    """Vectors for `hashes`: those in `near` close to the query's, the others far from it."""
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(hashes), DIM)).astype(np.float32)
    vecs[:, 0] = -5.0  # away from the query (the first axis)
    for row, h in enumerate(hashes):
        if h in near:
            vecs[row] = np.eye(DIM, dtype=np.float32)[0] + 0.01 * row
    service.db.ensure_model_table("m", DIM)
    with service.db.transaction():
        service.db.write_vectors(list(hashes), vecs, "m")


def _hashes(service: CodeRag, prefix: str) -> list[str]:
    return sorted({str(h) for (h,) in service.db.rows(
        "SELECT c.hash FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path LIKE ?", (prefix + "%",))})


def _hits(service: CodeRag, embed: bool, k: int = 5) -> list[SearchHit]:
    query_vec = np.eye(DIM, dtype=np.float32)[0]
    searcher = Searcher(service.db, service.settings.search, (lambda text: query_vec) if embed else None)
    return list(searcher.search(QUERY, k=k, mode="hybrid").hits)


def _top(service: CodeRag, embed: bool, k: int = 5) -> list[str]:
    return [h.unit.path for h in _hits(service, embed, k)]


def _nearest_score(service: CodeRag) -> float:
    """The fused score of the query vector's nearest chunk, found by the vectors alone."""
    return next(h.score for h in _hits(service, True, k=40) if h.reasons == ("vector#1",))


@pytest.fixture
def books(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(_repo()))


def test_a_few_embedded_chunks_do_not_push_keyword_hits_out(books: CodeRag) -> None:
    keywords = _top(books, embed=False)
    assert keywords == [f"books/ledger_{i:02d}.py" for i in range(5)]
    unrelated = _hashes(books, "misc/other_0")[:2]  # 2 of 40 chunks embedded: 5%
    _embed(books, unrelated, near=unrelated)
    assert vector.embedded_share(books.db) == pytest.approx(2 / 40)
    # the two nearest of the few embedded chunks are no match for the query's keywords: the
    # first is fused as about the 20th of all the chunks
    assert _top(books, embed=True) == keywords
    assert _nearest_score(books) == pytest.approx(1.0 / (books.settings.search.rrf_k + 20))


def test_a_fully_embedded_index_fuses_as_before(books: CodeRag) -> None:
    every = sorted({str(h) for (h,) in books.db.rows("SELECT hash FROM chunks")})
    near = _hashes(books, "misc/other_0")[:2]
    _embed(books, every, near=near)
    assert vector.embedded_share(books.db) == 1.0
    query_vec = np.eye(DIM, dtype=np.float32)[0]
    searcher = Searcher(books.db, books.settings.search, lambda text: query_vec)
    ranked = searcher._rank(QUERY, router.classify(QUERY), 60, None, "hybrid")
    assert ranked.spread == {}  # no stretch: rrf scores the plain ranks, as before
    assert _nearest_score(books) == 1.0 / (books.settings.search.rrf_k + 1)


def test_the_share_is_counted_again_when_vectors_are_added(books: CodeRag) -> None:
    hashes = _hashes(books, "misc/")
    _embed(books, hashes[:4], near=hashes[:1])
    assert vector.embedded_share(books.db) == pytest.approx(4 / 40)
    with books.db.transaction():
        books.db.write_vectors(hashes[4:8], np.ones((4, DIM), dtype=np.float32), "m")
    assert vector.embedded_share(books.db) == pytest.approx(8 / 40)


def test_rrf_without_a_stretch_scores_exactly_as_before() -> None:
    lists = {"bm25": ["a", "b", "c", "d"], "vector": ["x", "c", "a"]}
    weights = {"bm25": 1.0, "vector": 1.0}
    plain = rrf(lists, weights)
    assert rrf(lists, weights, spread={"vector": 1.0}) == plain
    assert rrf(lists, weights, spread={}) == plain
    assert [f.key for f in plain] == ["a", "c", "x", "b", "d"]
    stretched = rrf(lists, weights, spread={"vector": 20.0})  # "x", first of a 5% sample: about 20th
    assert [f.key for f in stretched] == ["c", "a", "b", "d", "x"]
    assert {f.key: f.score for f in stretched}["x"] == pytest.approx(1.0 / (60 + 20))
