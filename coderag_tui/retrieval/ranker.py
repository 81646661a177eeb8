"""The learned ranker: gradient-boosted trees over per-candidate features give the final order
of a pasted report's files (and of its units), where the hand-tuned fusion gave it before.

The trees were trained offline (bench/train_ranker.py, LightGBM's LambdaMART on real issues
and the files their fixes changed) and ship as a small JSON file read here with numpy alone:
no training library at run time. `[search] ranker = "fusion"` keeps the fusion's order; so does
a query the model was not trained for (a one-line question), a missing model file and a mode
other than hybrid.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TypeVar

import numpy as np

from coderag_tui.errors import ConfigError
from coderag_tui.models import SearchFilters, UnitRef
from coderag_tui.retrieval import filerank, lexical, rank_features, report, symbols, unit_features
from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.retrieval.fusion import Fused
from coderag_tui.store import rank_reads
from coderag_tui.store.backend import StoreBackend

FORMAT = "coderag-ranker/1"
RANKERS = ("learned", "fusion")
TITLE_CHUNKS = 60
ROWS_AT_ONCE = 2048  # rows whose tests are made together (the test columns: rows x tests)


@dataclass(frozen=True)
class Trees:
    """An additive tree ensemble in flat arrays: node i tests `x[feature[i]] <= threshold[i]`
    and goes to left[i] or right[i]; a leaf (feature -1) adds value[i]."""

    features: tuple[str, ...]
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Trees:
        nodes = data["nodes"]
        assert isinstance(nodes, Mapping)
        return cls(tuple(data["features"]),  # type: ignore[arg-type]
                   np.asarray(nodes["feature"], dtype=np.int32),
                   np.asarray(nodes["threshold"], dtype=np.float64),
                   np.asarray(nodes["left"], dtype=np.int32),
                   np.asarray(nodes["right"], dtype=np.int32),
                   np.asarray(nodes["value"], dtype=np.float64),
                   np.asarray(data["roots"], dtype=np.int32), int(data["depth"]))  # type: ignore[call-overload]

    @functools.cached_property
    def _walk(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The nodes as one step of a walk: (feature, threshold, children), where a leaf tests
        feature 0 against +inf and both its children are itself (a walk that reached it stays),
        and node i's children are at 2i (the test fails: right) and 2i + 1 (left)."""
        idx = np.arange(len(self.feature))
        leaf = self.feature < 0
        feature = np.where(leaf, 0, self.feature).astype(np.intp)
        threshold = np.where(leaf, np.inf, self.threshold)
        children = np.stack([np.where(leaf, idx, self.right), np.where(leaf, idx, self.left)], axis=1)
        return feature, threshold, children.ravel().astype(np.intp)

    @functools.cached_property
    def _masks(self) -> _Masks | None:
        """The trees as bit masks over their leaves (None when a tree has over 64 leaves)."""
        return _Masks.of(self)

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of x (rows: candidates, columns: `features` in order).

        Every test of every tree is made at once, and each tree's exit leaf is found from the
        tests that fail (QuickScorer: a failed test, going right, rules out the leaves of its
        left subtree; the leftmost leaf left is the one a walk reaches). Trees with over 64
        leaves are walked one level at a time for all rows together."""
        if not len(x) or not len(self.roots):
            return np.zeros(len(x))
        masks = self._masks
        if masks is None:
            return np.ascontiguousarray(self._walked(x)).sum(axis=1)
        # a block of rows at a time keeps every test's column small (training scores all its rows);
        # a row's sum in tree order over a C-ordered array: the same float additions as ever
        return np.concatenate([np.ascontiguousarray(masks.leaf_values(x[i : i + ROWS_AT_ONCE])).sum(axis=1)
                               for i in range(0, len(x), ROWS_AT_ONCE)])

    def _walked(self, x: np.ndarray) -> np.ndarray:
        feature, threshold, children = self._walk
        flat = np.ascontiguousarray(x).ravel()
        row_at = (np.arange(len(x), dtype=np.intp) * x.shape[1])[:, None]
        node = np.broadcast_to(self.roots.astype(np.intp), (len(x), len(self.roots)))
        for _ in range(self.depth):
            go_left = flat[row_at + feature[node]] <= threshold[node]
            node = children[2 * node + go_left]
        return self.value[node]


@dataclass(frozen=True)
class _Masks:
    """Trees as QuickScorer reads them. Each tree's leaves are numbered left to right (bit i:
    leaf i); the tree's tests sit in slots, slot k of every tree in one row of `feature`,
    `threshold` and `mask` (a tree with fewer tests fills its last slots with a test that
    never rules anything out). A failed test ANDs the tree's mask with its `mask` (its left
    subtree's bits cleared); the lowest bit left is the exit leaf."""

    feature: np.ndarray  # (slots * trees,): the tested column
    threshold: np.ndarray  # float64, as trained
    threshold32: np.ndarray  # the largest float32 <= each threshold: the same test for float32 rows
    mask: np.ndarray  # unsigned, as wide as the most leaves of a tree needs
    slots: int
    lowest_bit: np.ndarray  # per mask value, the index of its lowest set bit
    values: np.ndarray  # (trees * width,): tree t's leaf i at t * width + i (0 past its leaves)
    width: int

    @classmethod
    def of(cls, trees: Trees) -> _Masks | None:
        per_tree: list[tuple[list[tuple[int, int]], list[int]]] = []
        for root in trees.roots.tolist():
            tests: list[tuple[int, int]] = []  # (node, its left subtree's leaves as bits)
            leaves: list[int] = []
            stack: list[tuple[int, bool]] = [(root, False)]
            pending: dict[int, int] = {}  # node -> its first leaf's number
            while stack:  # in order: left subtree, the node, right subtree
                node, back = stack.pop()
                if trees.feature[node] < 0:
                    leaves.append(node)
                elif back:
                    first = pending.pop(node)
                    tests.append((node, ((1 << (len(leaves) - first)) - 1) << first))
                    stack.append((int(trees.right[node]), False))
                else:
                    pending[node] = len(leaves)
                    stack.append((node, True))
                    stack.append((int(trees.left[node]), False))
            per_tree.append((tests, leaves))
        width = max(len(leaves) for _, leaves in per_tree)
        if width > 64:
            return None
        kind = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= width)
        full = int(np.iinfo(kind).max)
        slots = max(1, *(len(tests) for tests, _ in per_tree))
        n = len(per_tree)
        feature = np.zeros((slots, n), dtype=np.intp)
        threshold = np.full((slots, n), np.inf)
        mask = np.full((slots, n), full, dtype=kind)
        values = np.zeros((n, width))
        for t, (tests, leaves) in enumerate(per_tree):
            for k, (node, left_bits) in enumerate(tests):
                feature[k, t] = trees.feature[node]
                threshold[k, t] = trees.threshold[node]
                mask[k, t] = full & ~left_bits
            values[t, : len(leaves)] = trees.value[leaves]
        t64 = threshold.ravel()
        with np.errstate(over="ignore"):
            t32 = t64.astype(np.float32)
        t32 = np.where(t32.astype(np.float64) > t64, np.nextafter(t32, np.float32(-np.inf)), t32)
        if width <= 16:
            m = np.arange(1 << np.iinfo(kind).bits)
            lowest = np.zeros(len(m), dtype=np.intp)
            lowest[1:] = np.frexp((m[1:] & -m[1:]).astype(np.float64))[1] - 1
        else:
            lowest = np.zeros(0, dtype=np.intp)
        return cls(feature.ravel(), t64, t32, mask.ravel(), slots, lowest, values.ravel(), width)

    def leaf_values(self, x: np.ndarray) -> np.ndarray:
        """(rows, trees): each row's exit leaf's value in each tree."""
        n = len(self.mask) // self.slots
        columns = np.ascontiguousarray(x.T)[self.feature]  # (slots * trees, rows)
        threshold = self.threshold32 if x.dtype == np.float32 else self.threshold
        passed = columns <= threshold[:, None]
        masks = self.mask[:, None] | -passed.astype(self.mask.dtype)  # a passed test rules out nothing
        alive = np.bitwise_and.reduce(masks.reshape(self.slots, n, len(x)), axis=0)  # (trees, rows)
        if len(self.lowest_bit):
            leaf = self.lowest_bit[alive]
        else:
            leaf = np.frexp((alive & (~alive + alive.dtype.type(1))).astype(np.float64))[1] - 1
        return self.values[(np.arange(n) * self.width)[:, None] + leaf].T


@dataclass(frozen=True)
class Model:
    files: Trees
    units: Trees | None
    source: str


def default_model_path() -> Path:
    return Path(str(resources.files("coderag_tui") / "data" / "ranker" / "model.json"))


@functools.lru_cache(maxsize=8)
def load_model(path: str = "") -> Model | None:
    """The model at `path` (default: the one shipped with the package); None when there is none.
    A file that is not a model of this format is a ConfigError."""
    p = Path(path) if path else default_model_path()
    if not p.is_file():
        if path:
            raise ConfigError(f"config: search.ranker_model: no such file: {path}")
        return None
    try:
        data = json.loads(p.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
        files = Trees.from_json(data["files"])
        if files.features != rank_features.FILE_FEATURES:
            raise ValueError("its file features are not this version's")
        units = Trees.from_json(data["units"]) if data.get("units") else None
        if units is not None and units.features != unit_features.UNIT_FEATURES:
            raise ValueError("its unit features are not this version's")
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"config: ranker model {p}: {exc}") from exc
    return Model(files, units, str(p))


def check_ranker(setting: str) -> None:
    if setting not in RANKERS:
        raise ConfigError(f"config: search.ranker must be learned or fusion, got {setting!r}")


def applies(query: str) -> bool:
    """The model learned from pasted issue reports: other queries keep the fusion's order."""
    return filerank.is_report(query)


def title_paths(db: StoreBackend, facts: rank_features.QueryFacts, filters: SearchFilters | None) -> list[str]:
    """Files by BM25 over the report's title alone (a title names the problem; the body adds
    environment, logs and the reporter's guesses)."""
    if not facts.report:
        return []
    terms = lexical.informative_terms(db, lexical.query_terms(facts.title, 60))
    if not terms:
        return []
    matches = lexical.bm25_chunks(db, "", limit=TITLE_CHUNKS, filters=filters, terms=terms)
    paths = rank_reads.file_paths(db, sorted({m.file_id for m in matches}))
    return list(dict.fromkeys(paths[m.file_id] for m in matches if m.file_id in paths))


@dataclass(frozen=True)
class Prepared:
    """What the file and unit features share for one query."""

    sig: report.ReportSignals
    facts: rank_features.QueryFacts
    graph: rank_features.GraphReach


def prepare(db: StoreBackend, query: str, lists: Mapping[str, Sequence[int]], units: Mapping[int, UnitRef],
            tests: bool, docs: bool) -> Prepared:
    """The report's signals and facts, and where the graph leads from the code it names (kept
    per store, as the file order is, for the second call on the same report and lists)."""
    key = (db.chunk_state(), query, tests, docs, _lists_key(lists))
    last = _LAST_PREPARED.get(db)
    if last is not None and last[0] == key:
        return last[1]
    sig = report.signals(query)
    facts = rank_features.query_facts(query, sig, len(symbols.mentioned_names(sig.text)), tests, docs)
    out = Prepared(sig, facts, rank_features.graph_reach(db, lists, units))
    _LAST_PREPARED[db] = (key, out)
    return out


def _lists_key(lists: Mapping[str, Sequence[int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((name, tuple(ids)) for name, ids in sorted(lists.items()))


# per store: the last query's Prepared and what it was computed from
_LAST_PREPARED: weakref.WeakKeyDictionary[StoreBackend, tuple[object, Prepared]] = weakref.WeakKeyDictionary()


def file_matrix(db: StoreBackend, prep: Prepared, lists: Mapping[str, Sequence[int]], units: Mapping[int, UnitRef],
                chunks: Sequence[ChunkMatch], fused: Sequence[Fused[str]],
                filters: SearchFilters | None) -> tuple[list[str], np.ndarray]:
    """The candidate files and their features (what the model scores, and what it was trained on)."""
    return rank_features.file_candidates(db, prep.facts, lists, units, chunks, fused,
                                         title_paths(db, prep.facts, filters), prep.graph)


def rank_files(db: StoreBackend, model: Model, prep: Prepared, lists: Mapping[str, Sequence[int]],
               units: Mapping[int, UnitRef], chunks: Sequence[ChunkMatch], fused: Sequence[Fused[str]],
               filters: SearchFilters | None) -> list[Fused[str]]:
    """The fusion's files (and the graph's and the title's) re-ordered by the model's scores.

    `coderag search` on a report ranks its files twice (`search_files`, then `search` for the
    units of the best files) from the same retrievers' lists: the last order is kept per store and
    given again when everything it was computed from is the same (the query's facts, every list,
    the filters, the model and the index's state)."""
    key = (db.chunk_state(), model.source, prep.facts, filters, tuple(fused), tuple(chunks), _lists_key(lists))
    last = _LAST_FILES.get(db)
    if last is not None and last[0] == key:
        return list(last[1])
    paths, x = file_matrix(db, prep, lists, units, chunks, fused, filters)
    out = ordered(paths, model.files.score(x), {f.key: f.reasons for f in fused})
    _LAST_FILES[db] = (key, tuple(out))
    return out


# per store: the key of the last file order rank_files computed, and that order
_LAST_FILES: weakref.WeakKeyDictionary[StoreBackend, tuple[object, tuple[Fused[str], ...]]] = (
    weakref.WeakKeyDictionary())


def unit_matrix(db: StoreBackend, prep: Prepared, lists: Mapping[str, Sequence[int]], units: Mapping[int, UnitRef],
                fused: Sequence[Fused[int]], files: Sequence[Fused[str]]) -> tuple[list[UnitRef], np.ndarray]:
    rt = unit_features.report_text(db, prep.sig.text, prep.sig)
    return unit_features.unit_candidates(db, prep.facts, rt, lists, units, fused, files,
                                         (prep.graph.unit_hop1, prep.graph.unit_hop2))


def rank_units(db: StoreBackend, model: Model, prep: Prepared, lists: Mapping[str, Sequence[int]],
               units: Mapping[int, UnitRef], fused: Sequence[Fused[int]],
               files: Sequence[Fused[str]]) -> list[tuple[UnitRef, Fused[int]]]:
    """The fusion's units and the best files' functions, re-ordered by the model's unit scores."""
    assert model.units is not None
    cands, x = unit_matrix(db, prep, lists, units, fused, files)
    by_id = {u.id: u for u in cands}
    out = ordered([u.id for u in cands], model.units.score(x), {f.key: f.reasons for f in fused})
    return [(by_id[f.key], f) for f in out]


K = TypeVar("K", bound=Hashable)


def ordered(keys: Sequence[K], scores: np.ndarray, reasons: Mapping[K, tuple[str, ...]]) -> list[Fused[K]]:
    """Keys by score, best first (stable: ties keep the fusion's order)."""
    order = sorted(range(len(keys)), key=lambda i: -scores[i])
    return [Fused(keys[i], float(scores[i]), (*reasons.get(keys[i], ("graph",)), "learned")) for i in order]
