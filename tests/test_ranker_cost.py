"""What keeps the learned ranker cheap without changing what it says: a report's files ranked once
for `search_files` and `search`, the inbound counts read from the edges' index, the words a file
holds found over its distinct runs, and every test of the trees made at once."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.retrieval import rank_features, ranker
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag
from coderag_tui.store import rank_reads
from coderag_tui.store.backend import open_store
from tests.helpers.ranker_repo import REPO, REPORT, count_calls


def test_search_reuses_the_file_order_search_files_computed_for_the_same_report(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag],
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(REPO)
    service = open_service(root)  # the shipped model
    calls = count_calls(monkeypatch, rank_features, "file_candidates")
    reach = count_calls(monkeypatch, rank_features, "graph_reach")
    files = [(h.unit.path, h.score) for h in service.search_files(REPORT, k=5)]
    service.search(REPORT, k=5)
    assert len(calls) == 1 and len(reach) == 1
    assert [(h.unit.path, h.score) for h in service.search_files(REPORT, k=5)] == files
    assert len(calls) == 1
    # another report, or the same one on a changed index, is ranked anew
    service.search_files(REPORT.replace("legend", "labels"), k=5)
    assert len(calls) == 2
    (root / "pkg" / "arrange.py").write_text((root / "pkg" / "arrange.py").read_text() + "\n\ndef spread(x):\n"
                                             "    return x\n")
    service.update()
    service.search_files(REPORT, k=5)
    assert len(calls) == 3


def test_the_inbound_counts_come_from_the_edges_index_alone(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo({
        **REPO,
        "tests/test_layout.py": "from pkg._layout import compute_span\n\n\ndef test_span():\n"
                                "    assert compute_span([1, 3]) == 2\n",
    }))
    db = service.db
    plan = " ".join(str(r[-1]) for r in db.rows("EXPLAIN QUERY PLAN " + rank_reads.INBOUND.format(marks="?"),
                                                ("pkg/_layout.py",)))
    assert "COVERING INDEX edges_dst" in plan, plan
    counts = rank_reads.inbound_files(db, ["pkg/_layout.py", "pkg/arrange.py", "pkg/plot.py"])
    # _layout: imported and called by arrange.py and the test file, tested by the test file
    assert counts["pkg/_layout.py"] == (2, 1)
    assert counts["pkg/arrange.py"] == (1, 0)
    assert "pkg/plot.py" not in counts  # nothing refers to it


TRICKY = [
    "", "a", "ab", "query", "queryset", "set", "query_set", "utils", "café", "cafe", "straße", "strasse",
    "i̇stanbul", "istanbul", "名前", "前", "x1", "1x", "ß", "é", "foo-bar", "foo.bar", "a b", "_", "über", "uber",
]
TEXTS = [
    "def query_set(self):\n    return QuerySet(self.model)  # café, straße\n",
    "İstanbul = 1\nnames = ['名前', 'x1y']\nfoo-bar foo.bar a b\n",
    "über_alles = \ud800broken\n\tcafe\u00a0strasse\u2028next",
    "",
    "_",
]


def test_the_words_a_text_holds_are_its_substrings_exactly() -> None:
    rng = random.Random(7)
    alphabet = list("abcé_ß名 .-\n1İ")
    texts = [t.lower() for t in TEXTS] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
                                         for _ in range(300)]
    for text in texts:
        words = TRICKY + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(30)]
        assert rank_features.WordTest(words).held(text) == {w for w in words if w in text}, text


def walk_node_by_node(trees: ranker.Trees, x: np.ndarray) -> np.ndarray:
    """The trees walked as first written (the reference the faster walk must equal)."""
    rows = np.arange(len(x))[:, None]
    node = np.broadcast_to(trees.roots, (len(x), len(trees.roots))).copy()
    for _ in range(trees.depth):
        f = trees.feature[node]
        inner = f >= 0
        if not inner.any():
            break
        go_left = x[rows, np.where(inner, f, 0)] <= trees.threshold[node]
        node = np.where(inner, np.where(go_left, trees.left[node], trees.right[node]), node)
    return np.asarray(trees.value[node].sum(axis=1))


def test_the_shipped_trees_score_as_walked_node_by_node() -> None:
    ranker.load_model.cache_clear()
    model = ranker.load_model()
    assert model is not None and model.units is not None
    rng = np.random.default_rng(3)
    for trees in (model.files, model.units):
        x = (rng.normal(size=(300, len(trees.features))) * 3).astype(np.float32)
        x[:100] = np.round(x[:100])
        inner = trees.feature >= 0  # values exactly at the thresholds, where `<=` decides
        for i, j in enumerate(rng.choice(np.flatnonzero(inner), size=100)):
            x[100 + i, trees.feature[j]] = np.float32(trees.threshold[j])
        x[200:] = 0.0
        assert np.array_equal(trees.score(x), walk_node_by_node(trees, x))


def test_on_postgresql_a_report_is_ranked_once_too(
        make_repo: Callable[..., Path], pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(REPO)
    settings = Settings(embed=EmbedSettings(enabled=False))
    store = open_store(pg_url, source=str(root), create=True)
    try:
        Indexer(store, root, settings).run()
        searcher = Searcher(store, settings.search, None)
        calls = count_calls(monkeypatch, rank_features, "file_candidates")
        files = searcher.search_files(REPORT, k=5)
        units = searcher.search(REPORT, k=5).hits
        assert len(calls) == 1
        assert files and all("learned" in h.reasons for h in [*files, *units])
        inbound = rank_reads.inbound_files(store, ["pkg/_layout.py", "pkg/arrange.py"])
        assert inbound == {"pkg/_layout.py": (1, 0), "pkg/arrange.py": (1, 0)}
    finally:
        store.close()


def random_trees(rng: np.random.Generator, n_trees: int, leaves: tuple[int, int], n_features: int) -> ranker.Trees:
    """Trees of random shapes (a lone leaf among them), thresholds that float32 cannot hold."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    roots: list[int] = []
    depth = 0

    def grow(n_leaves: int, level: int) -> int:
        nonlocal depth
        depth = max(depth, level)
        node = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        if n_leaves > 1:
            k = int(rng.integers(1, n_leaves))
            feature[node] = int(rng.integers(n_features))
            threshold[node] = float(rng.normal()) + 1e-12  # between two float32 values
            left[node] = grow(k, level + 1)
            right[node] = grow(n_leaves - k, level + 1)
        return node

    for t in range(n_trees):
        roots.append(grow(1 if t == 0 else int(rng.integers(*leaves)), 0))
    return ranker.Trees(tuple(f"f{i}" for i in range(n_features)), np.asarray(feature, dtype=np.int32),
                        np.asarray(threshold), np.asarray(left, dtype=np.int32), np.asarray(right, dtype=np.int32),
                        rng.normal(size=len(feature)), np.asarray(roots, dtype=np.int32), depth)


@pytest.mark.parametrize("leaves", [(2, 9), (2, 17), (10, 33), (30, 65), (60, 90)])
def test_any_trees_score_as_walked_node_by_node(leaves: tuple[int, int]) -> None:
    rng = np.random.default_rng(leaves[1])
    trees = random_trees(rng, 40, leaves, 6)
    x64 = rng.normal(size=(200, 6))
    inner = np.flatnonzero(trees.feature >= 0)
    for i, j in enumerate(rng.choice(inner, size=100)):  # the float32 values either side of a threshold
        x64[i, trees.feature[j]] = trees.threshold[j]
    x64[100:120] = np.nan
    x64[120:140, 2] = np.inf
    x32 = x64.astype(np.float32)
    x32[:50] = np.nextafter(x32[:50], np.float32(np.inf))
    for x in (x64, x32):
        assert np.array_equal(trees.score(x), walk_node_by_node(trees, x), equal_nan=True)
    many = np.tile(x32, (ranker.ROWS_AT_ONCE // len(x32) + 2, 1))  # rows scored a block at a time
    assert np.array_equal(trees.score(many), walk_node_by_node(trees, many), equal_nan=True)
    assert len(trees.score(x32[:0])) == 0


def test_the_package_a_path_lies_in_is_read_from_the_querys_names_as_package_match_reads_it() -> None:
    rng = random.Random(5)
    parts = ["sklearn", "linear_model", "_logistic", "utils", "a", ""]
    for _ in range(500):
        modules = tuple(tuple(rng.choice(parts) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 3)))
        path = "/".join(rng.choice(parts[:-1]) for _ in range(rng.randint(1, 4))) + rng.choice([".py", ""])
        bare = rank_features._shape(path).bare_parts
        trie = rank_features._trie(modules)
        matched = rank_features._spelled(bare, trie) if trie else 0
        assert (matched, matched >= len(bare) - 1 > 0) == rank_features.package_match(path, modules), (path, modules)
