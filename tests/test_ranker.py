"""The learned ranker: trees read from JSON score as built, candidates come from the retrievers and
the graph, the model orders a report's files and units, and the fusion stays the fallback."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coderag_tui.config import Settings
from coderag_tui.errors import ConfigError
from coderag_tui.retrieval import rank_features, ranker, unit_features
from coderag_tui.service import CodeRag
from tests.helpers.ranker_repo import REPO, REPORT


def _leaf(value: float) -> dict[str, Any]:
    return {"leaf_value": value}


def _split(feature: int, threshold: float, left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {"split_feature": feature, "threshold": threshold, "decision_type": "<=", "left_child": left,
            "right_child": right}


def trees_json(features: tuple[str, ...], trees: list[dict[str, Any]]) -> dict[str, Any]:
    """LightGBM's dump shape flattened as bench/train_ranker.py exports it."""
    from bench.train_ranker import export

    class Dump:
        def dump_model(self) -> dict[str, Any]:
            return {"tree_info": [{"tree_structure": t} for t in trees]}

    return export(Dump(), features)


def write_model(path: Path, files: dict[str, Any], units: dict[str, Any] | None = None) -> Path:
    data: dict[str, Any] = {"format": ranker.FORMAT, "files": files}
    if units is not None:
        data["units"] = units
    path.write_text(json.dumps(data))
    ranker.load_model.cache_clear()
    return path


def test_trees_score_each_row_as_the_trees_say() -> None:
    features = ("a", "b")
    model = ranker.Trees.from_json(trees_json(features, [
        _split(0, 0.5, _leaf(1.0), _split(1, 2.0, _leaf(2.0), _leaf(3.0))),
        _leaf(0.25),
    ]))
    x = np.array([[0.0, 9.0], [1.0, 1.0], [1.0, 5.0], [0.5, 5.0]])
    assert model.score(x).tolist() == [1.25, 2.25, 3.25, 1.25]
    assert model.score(np.zeros((0, 2))).tolist() == []


def test_a_split_just_below_zero_sends_zero_right_after_the_export() -> None:
    """LightGBM parts zero from the negative values at -1e-35: the exported model (through JSON,
    as shipped) must keep that threshold, not round it to 0.0."""
    features = ("a",)
    data = json.loads(json.dumps(trees_json(features, [_split(0, -1.0000000180025095e-35, _leaf(1.0), _leaf(2.0))])))
    model = ranker.Trees.from_json(data)
    assert model.score(np.array([[0.0], [-0.5], [1e-40]])).tolist() == [2.0, 1.0, 2.0]


def test_a_model_file_of_another_format_or_features_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"format": "other/1"}))
    ranker.load_model.cache_clear()
    with pytest.raises(ConfigError, match="format"):
        ranker.load_model(str(bad))
    write_model(bad, trees_json(("x",), [_leaf(0.0)]))
    with pytest.raises(ConfigError, match="features"):
        ranker.load_model(str(bad))
    with pytest.raises(ConfigError, match="no such file"):
        ranker.load_model(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="learned or fusion"):
        ranker.check_ranker("lerned")


def test_the_graph_brings_in_files_the_named_code_calls(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(REPO))
    searcher = service.searcher()
    paths, x = searcher.file_features(REPORT)
    assert "pkg/_layout.py" in paths  # reached in two hops from Plotter.draw: draw -> arrange -> compute_span
    row = x[paths.index("pkg/_layout.py")]
    names = rank_features.FILE_FEATURES
    assert row[names.index("g2")] > 0 and row[names.index("fused_rank")] > np.log2(1 + rank_features.MAX_CANDIDATES)
    assert x[paths.index("pkg/arrange.py"), names.index("g1")] > 0


def test_the_learned_order_replaces_the_fusion_for_reports_only(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag], tmp_path: Path) -> None:
    # a hand-made model: the second hop of the graph is what counts
    g2 = rank_features.FILE_FEATURES.index("g2")
    model = write_model(tmp_path / "model.json", trees_json(rank_features.FILE_FEATURES, [
        _split(g2, 0.0, _leaf(0.0), _leaf(5.0))]))
    settings = Settings()
    settings = dataclasses.replace(settings, search=dataclasses.replace(settings.search, ranker_model=str(model)))
    service = open_service(make_repo(REPO), settings)
    files = [h.unit.path for h in service.search_files(REPORT, k=5)]
    assert files[0] == "pkg/_layout.py", files
    assert "learned" in service.search_files(REPORT, k=5)[0].reasons
    fusion = dataclasses.replace(settings, search=dataclasses.replace(settings.search, ranker="fusion"))
    service2 = open_service(make_repo(REPO, name="repo2"), fusion)
    assert "pkg/_layout.py" not in [h.unit.path for h in service2.search_files(REPORT, k=5)]
    # a one-line question keeps the fusion's order
    question = "where does the plotter draw the legend"
    assert ([h.unit.path for h in service.search_files(question, k=5)]
            == [h.unit.path for h in service2.search_files(question, k=5)])


def test_units_of_the_best_files_join_the_candidates(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag], tmp_path: Path) -> None:
    g2 = rank_features.FILE_FEATURES.index("g2")
    from_file = unit_features.UNIT_FEATURES.index("from_file")
    ug2 = unit_features.UNIT_FEATURES.index("g2")
    model = write_model(tmp_path / "model.json",
                        trees_json(rank_features.FILE_FEATURES, [_split(g2, 0.0, _leaf(0.0), _leaf(5.0))]),
                        trees_json(unit_features.UNIT_FEATURES, [
                            _split(from_file, 0.5, _leaf(0.0), _split(ug2, 0.0, _leaf(1.0), _leaf(5.0)))]))
    settings = Settings()
    settings = dataclasses.replace(settings, search=dataclasses.replace(settings.search, ranker_model=str(model)))
    service = open_service(make_repo(REPO), settings)
    hits = service.search(REPORT, k=5)
    assert hits[0].unit.name == "compute_span", [h.unit.qualname for h in hits]
    assert (hits[0].chunk_start, hits[0].chunk_end) == (hits[0].unit.start_line, hits[0].unit.end_line)


def test_the_shipped_model_reads_with_this_versions_features_and_orders_reports(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    """The package ships a model for files and units; a change of the features without a new
    model would make every report an error, so it must load here."""
    ranker.load_model.cache_clear()
    model = ranker.load_model()
    assert model is not None and model.units is not None
    assert model.source == str(ranker.default_model_path())
    service = open_service(make_repo(REPO))  # the default settings: ranker = "learned", no model path
    assert all("learned" in h.reasons for h in service.search_files(REPORT, k=5))
    assert all("learned" in h.reasons for h in service.search(REPORT, k=5))


CHECKS = {
    "shop/checks.py": '''"""Checks of an order before it is saved: amounts, currencies, customers and discounts."""


def check_amount(order, amount, currency, customer, discount):
    """Total of an order: amount less discount, converted when the currencies differ."""
    total = amount - discount
    if currency != customer.currency:
        total = customer.convert(total, currency)
    if total < 0:
        total = 0
    order.total = total
    return order


def check_discount(order, discount):
    if discount > order.limit:
        raise ValueError("discount exceeds the order limit")
    return discount


def check_customer(customer):
    return customer is not None
''',
    "shop/order.py": '''class Order:
    def __init__(self, total):
        self.total = total

    def __repr__(self):
        return f"Order({self.total})"
''',
    **REPO,  # other files, so that the report's words are rarer than the index's
}
CHECKS_REPORT = '''Saving an order with a discount fails for a customer in another currency
When the order amount is converted to the customer's currency and the discount is applied, saving
the order fails with

```
ValueError: discount exceeds the order limit
```

although the amount after the discount is below the limit in the customer's currency. The
representation of the order shows the total before the discount.
'''


def test_a_units_text_is_compared_with_the_report_and_its_files_other_units(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag], tmp_path: Path) -> None:
    """check_discount holds the report's error message (runs of three words), check_amount many
    of its words; within their file the units are ranked by the report words' idf and share
    it; a model that weights the runs of words puts check_discount first."""
    names = unit_features.UNIT_FEATURES
    service = open_service(make_repo(CHECKS))
    hits, x = service.searcher().unit_features(CHECKS_REPORT)
    at = {h.unit.name: i for i, h in enumerate(hits)}
    assert {"check_amount", "check_discount", "check_customer"} <= set(at), list(at)
    row = {name: x[i] for name, i in at.items()}
    col = names.index
    assert row["check_discount"][col("trigrams")] >= 4 > row["check_amount"][col("trigrams")]
    three = sorted(("check_amount", "check_discount", "check_customer"), key=lambda n: -row[n][col("text_idf")])
    assert [row[n][col("rank_in_file")] for n in three] == pytest.approx([1.0, np.log2(3), 2.0])
    shares = sum(row[n][col("file_share")] for n in three)
    assert shares == pytest.approx(1.0, abs=1e-5)
    assert row["check_discount"][col("name_idf")] > 0  # "discount" is a word of the report
    assert row["check_discount"][col("idf_density")] > 0
    # a special method whose topic the report speaks of, in a class whose name's words it uses
    assert row["__repr__"][col("dunder_topic")] == 1.0 and row["__init__"][col("dunder_topic")] == 0.0
    assert row["__repr__"][col("owner_words")] == 1.0 and row["check_discount"][col("owner_words")] == 0.0
    trigrams = col("trigrams")
    model = write_model(tmp_path / "model.json", trees_json(rank_features.FILE_FEATURES, [_leaf(0.0)]),
                        trees_json(names, [_split(trigrams, 2.5, _leaf(0.0), _leaf(5.0))]))
    settings = Settings()
    settings = dataclasses.replace(settings, search=dataclasses.replace(settings.search, ranker_model=str(model)))
    service2 = open_service(make_repo(CHECKS, name="repo2"), settings)
    assert service2.search(CHECKS_REPORT, k=3)[0].unit.name == "check_discount"
