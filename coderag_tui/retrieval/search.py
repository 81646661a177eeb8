"""Hybrid search: route the query, run the retrievers that fit, fuse per code unit with RRF.

Retrievers: BM25 over chunks (lexical), KNN over chunk vectors (vector), definitions named by
the query (symbols) and, for structural questions, the graph. Chunks map to their innermost
unit; a unit ranks at its best chunk. With no vectors the search is keywords + symbols + graph.
The lists fused beside BM25, vectors and descriptions (symbols, names, traces) and their
weights are one table, retrieval/signals.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from coderag_tui.config import SearchSettings
from coderag_tui.models import SearchFilters, SearchHit, UnitRef
from coderag_tui.parsing.extract import is_test_path
from coderag_tui.retrieval import (
    descriptions,
    filerank,
    lexical,
    prose,
    ranker,
    report,
    router,
    signals,
    structural,
    unit_features,
    vector,
)
from coderag_tui.retrieval.common import ChunkMatch, keep_kind, unit_ranking
from coderag_tui.retrieval.fusion import Fused, rrf
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.refine import refine
from coderag_tui.retrieval.rerank import Reranker
from coderag_tui.retrieval.router import Route
from coderag_tui.store import ranked, read, retrieval_reads
from coderag_tui.store.backend import StoreBackend

QueryEmbedder = Callable[[str], "np.ndarray | None"]
MODES = ("hybrid", "bm25", "vector")
RERANK = "rerank"  # hybrid, then the reranker re-orders the top hits
LABELS = {"symbol": "symbol", "fuzzy": "symbol~", "trace": "trace"}
MODEL_CHARS = 900
SHARE_POWER = 0.5
FILE_VECTOR_SHARE = 0.5
TEST_WEIGHT = 0.7  # test code's fused score is scaled by this unless the query is about tests
# With no keyword or symbol match, vector hits below this cosine are noise: on requests 2.32.3
# (bundled MiniLM) the nearest chunk to 8 nonsense queries was 0.18-0.30, to its 48 SWE-QA
# questions 0.30-0.67 (all 48 also match keywords).
WEAK_VECTOR = 0.32
# A pasted snippet names many rare words, each nearly enough to find its code: beside its vector,
# BM25 reads only this many postings for them (its time grows with the postings it reads)
SNIPPET_POSTINGS = 5_000
_ABOUT_TESTS = re.compile(r"\btests?\b|\btesting\b|\bspecs?\b|\btest_", re.I)
K = TypeVar("K", bound=Hashable)
_VECTOR_BRANCH = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coderag-vector-branch")


def vector_share(query: str) -> float:
    """How much of the query the embedding model reads (it stops at ~256 tokens, about
    MODEL_CHARS characters): the vector list's weight is scaled by the square root of that share,
    so a long issue text, whose tail only BM25 and the symbols see, leans on them more."""
    return min(1.0, MODEL_CHARS / max(len(query), 1)) ** SHARE_POWER


def about_tests(query: str) -> bool:
    """The question is about tests. A pasted report is judged by its title (first line) only:
    its body names test files, `pytest` and test functions in passing (tracebacks, the steps to
    reproduce) while the bug is in the code under test."""
    text = query.strip().split("\n", 1)[0] if filerank.is_report(query) else query
    return bool(_ABOUT_TESTS.search(text))


def demote_tests(fused: list[Fused[K]], path_of: Callable[[K], str], query: str) -> list[Fused[K]]:
    """Scale the scores of test code by TEST_WEIGHT (unless the query is about tests): a
    question about behaviour is answered by the implementation first, its tests second."""
    if TEST_WEIGHT >= 1.0 or about_tests(query):
        return fused
    scaled = [Fused(f.key, f.score * TEST_WEIGHT, f.reasons) if is_test_path(path_of(f.key)) else f
              for f in fused]
    return sorted(scaled, key=lambda f: -f.score)


def demote_prose(fused: list[Fused[K]], prose_of: Callable[[K], bool], query: str) -> list[Fused[K]]:
    """Scale the scores of prose (docs, changelogs, templates) by prose.PROSE_WEIGHT unless the
    question is about documentation: a question about behaviour is answered by the code."""
    if prose.about_docs(query):
        return fused
    scaled = [Fused(f.key, f.score * prose.PROSE_WEIGHT, f.reasons) if prose_of(f.key) else f for f in fused]
    return sorted(scaled, key=lambda f: -f.score)


@dataclass
class Ranked:
    lists: dict[str, list[int]]  # retriever -> unit ids, best first
    weights: dict[str, float]
    best: dict[int, ChunkMatch]  # unit -> its best chunk
    vectors_used: bool = False
    chunks: list[ChunkMatch] = field(default_factory=list)  # BM25's chunk matches, best first (unrefined)
    vector_top: float = 0.0  # the nearest chunk's cosine similarity
    spread: dict[str, float] = field(default_factory=dict)  # list -> its ranks' stretch in the fusion

    def only_weak_vectors(self) -> bool:
        """Nothing but vector hits, none of them near: the query matches nothing (the nearest
        chunk to any text at all is still some chunk)."""
        return (not any(ids for name, ids in self.lists.items() if name != "vector")
                and self.vector_top < WEAK_VECTOR)


@dataclass(frozen=True)
class SearchResult:
    route: Route
    hits: tuple[SearchHit, ...]
    vectors_used: bool = False


class Searcher:
    """Searches one index. `embed_query` returns the query's vector, or None when the index has
    no vectors for the configured model (then search runs on keywords, symbols and the graph)."""

    def __init__(self, db: StoreBackend, settings: SearchSettings, embed_query: QueryEmbedder | None = None,
                 matrix: VectorMatrix | None = None, reranker: Reranker | None = None,
                 default_mode: str = "hybrid") -> None:
        self.db = db
        self.reranker = reranker  # re-orders hybrid's top hits in mode "rerank"
        self.default_mode = default_mode
        self.settings = settings
        self.embed_query = embed_query
        self.matrix = matrix  # an in-memory copy of the vectors (fast KNN), when one is kept

    # ------------------------------------------------------------------ retrievers
    def _bm25(self, terms: list[str], n: int, filters: SearchFilters | None,
              raw: list[ChunkMatch] | None = None, match: list[str] | None = None) -> list[ChunkMatch]:
        """BM25's chunks for `match` (default: the terms), refined by the terms."""
        fetch = n * (8 if filters is not None and filters.kind else 2)
        matches = lexical.bm25_chunks(self.db, "", limit=max(fetch, n * filerank.POOL) if raw is not None else fetch,
                                      filters=filters, terms=terms if match is None else match)
        if raw is not None:
            raw.extend(matches)
        return keep_kind(self.db, refine(self.db, matches[:fetch], terms, limit=n), filters)

    def _vector(self, query: str, terms: Future[list[str]], n: int,
                filters: SearchFilters | None) -> list[ChunkMatch] | None:
        """The vector branch, run on another thread (with its own read connection) while BM25
        runs on this one: embed the query, KNN, refine. None when there is no query vector."""
        vec = self.embed_query(query) if self.embed_query is not None else None
        if vec is None:
            return None
        db = self.db.reader()
        fetch = n * (8 if filters is not None and filters.kind else 2)
        matches = vector.knn_chunks(db, vec, limit=fetch, filters=filters, matrix=self.matrix)
        return keep_kind(db, refine(db, matches, terms.result(), limit=n), filters)

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        k: int | None = None,
        filters: SearchFilters | None = None,
        mode: str | None = None,
        candidates: int | None = None,
    ) -> SearchResult:
        """The top-k units for a query (mode: hybrid, bm25, vector, or rerank: hybrid whose top
        hits the reranker re-orders; the default is the searcher's default mode)."""
        with lexical.one_state():  # one read of the index state for every count of words
            return self._search(query, k, filters, mode, candidates)

    def _search(self, query: str, k: int | None, filters: SearchFilters | None, mode: str | None,
                candidates: int | None) -> SearchResult:
        mode = mode or self.default_mode
        if mode == RERANK:
            result = self.search(query, k, filters, "hybrid", candidates)
            graph = bool(result.hits) and result.hits[0].reasons[0].startswith("graph:")
            if self.reranker is None or graph:  # the graph's answers are facts, not guesses
                return result
            return dataclasses.replace(result, hits=tuple(self.reranker(query, result.hits)))
        k = k or self.settings.k
        n = max(candidates or self.settings.candidates, k)
        route = router.classify(query)
        if mode == "hybrid" and route.kind == router.STRUCTURAL:
            answers = structural.answer(self.db, route.op, route.target, filters, limit=max(k, 200))
            if answers:
                graph_hits = tuple(
                    SearchHit(a.unit, 1.0 / (i + 1), (f"graph:{route.op}", a.reason))
                    for i, a in enumerate(answers[:k])
                )
                return SearchResult(route, graph_hits)
        files = (filerank.UNIT_SHARE > 0 and mode == "hybrid" and route.kind == router.SEMANTIC
                 and filerank.is_report(query))
        model = self.learned(mode, query) if route.kind == router.SEMANTIC else None
        if model is not None and model.units is not None:
            return self._learned_units(query, route, k, filters, model)
        ranked = self._rank(query, route, n, filters, mode, files=files)
        if mode == "hybrid" and ranked.only_weak_vectors():
            return SearchResult(route, (), ranked.vectors_used)
        fused, units = self._fused_units(query, ranked, files, k * 3)
        hits = []
        for f in fused[:k]:
            u = units.get(f.key)
            if u is None:
                continue
            m = ranked.best.get(f.key)
            hits.append(SearchHit(u, f.score, f.reasons, m.start_line if m else 0, m.end_line if m else 0))
        return SearchResult(route, tuple(hits), ranked.vectors_used)

    def _fused_units(self, query: str, ranked: Ranked, files: bool, depth: int
                     ) -> tuple[list[Fused[int]], dict[int, UnitRef]]:
        """The retrievers' units fused (the first `depth`, tests and prose demoted) and those units."""
        known: dict[int, UnitRef] = {}
        if ranked.lists.get("summary"):  # a file's profile ranks files, not the file's head as a unit
            # read with the summary's units: the first `depth` of every list, where the fused
            # first `depth` nearly always come from (one round trip to a server, not two)
            known = read.get_units(self.db, [*ranked.lists["summary"],
                                             *(uid for ids in ranked.lists.values() for uid in ids[:depth])])
            ranked.lists["summary"] = [uid for uid in ranked.lists["summary"]
                                       if uid in known and known[uid].kind != "file"]
        if files and ranked.chunks and "bm25" in ranked.lists:
            chunk_units = read.get_units(self.db, [*ranked.lists["bm25"], *(m.unit_id for m in ranked.chunks)])
            ranked.lists["filed"] = filerank.units_by_file(ranked.lists["bm25"], chunk_units, [
                (chunk_units[m.unit_id].path, m.score) for m in ranked.chunks if m.unit_id in chunk_units])
            ranked.weights["filed"] = self.settings.weight_bm25 * filerank.UNIT_SHARE
        fused = rrf(ranked.lists, ranked.weights, k=self.settings.rrf_k, labels=LABELS, spread=ranked.spread)
        top = [f.key for f in fused[:depth]]
        known.update(read.get_units(self.db, [key for key in top if key not in known]))
        units = {key: known[key] for key in top if key in known}
        fused = demote_tests(fused[:depth], lambda key: units[key].path if key in units else "", query)
        fused = demote_prose(fused, lambda key: key in units and prose.is_prose_unit(units[key].path,
                                                                                  units[key].language), query)
        return fused, units

    def _learned_units(self, query: str, route: Route, k: int, filters: SearchFilters | None,
                       model: ranker.Model) -> SearchResult:
        """A report's units ordered by the learned ranker: the fusion's units and the functions
        of the best files by the learned file order, scored by the unit model."""
        prep, ranked, units, fused, files = self._learned_candidates(query, filters, model)
        out = ranker.rank_units(self.db, model, prep, ranked.lists, units, fused, files)
        hits = []
        for u, f in out[:k]:
            m = ranked.best.get(u.id)
            hits.append(SearchHit(u, f.score, f.reasons, m.start_line if m else u.start_line,
                                  m.end_line if m else u.end_line))
        return SearchResult(route, tuple(hits), ranked.vectors_used)

    def _learned_candidates(self, query: str, filters: SearchFilters | None, model: ranker.Model | None
                            ) -> tuple[ranker.Prepared, Ranked, dict[int, UnitRef], list[Fused[int]],
                                       list[Fused[str]]]:
        """One run of the retrievers for a report, and what the learned unit ranking needs of it:
        the learned file order (the fusion's without a model) and the fused units."""
        ranked, units, file_fused, _ = self._fused_files(query, self.settings.k, filters, "hybrid")
        prep = ranker.prepare(self.db, query, ranked.lists, units, about_tests(query), prose.about_docs(query))
        files = (ranker.rank_files(self.db, model, prep, ranked.lists, units, ranked.chunks, file_fused, filters)
                 if model is not None else file_fused)
        fused, unit_map = self._fused_units(query, ranked, True, unit_features.MAX_FUSED)
        return prep, ranked, unit_map, fused, files

    def _rank(self, query: str, route: Route, n: int, filters: SearchFilters | None, mode: str,
              files: bool = False) -> Ranked:
        """The ranked unit lists of the retrievers that fit the route and mode, with their weights."""
        s = self.settings
        out = Ranked({}, {"bm25": s.weight_bm25, "vector": s.weight_vector * vector_share(query),
                          "symbol": s.weight_symbol}, {})
        sig = report.signals(query) if route.kind == router.SEMANTIC else None
        text = route.target if route.kind == router.SYMBOL else sig.text if sig is not None else query
        # the vector branch runs on another core while BM25 runs here (numpy, onnxruntime and
        # SQLite release the GIL); it waits for the search terms only to refine its matches
        terms_ready: Future[list[str]] = Future()
        branch = (_VECTOR_BRANCH.submit(self._vector, query, terms_ready, n, filters)
                  if self.embed_query is not None and mode in ("hybrid", "vector") else None)
        try:
            words = lexical.query_terms(text)
            terms = lexical.informative_terms(self.db, words)
        except BaseException as exc:
            terms_ready.set_exception(exc)
            raise
        terms_ready.set_result(terms)
        if mode in ("hybrid", "bm25"):
            match = (lexical.informative_terms(self.db, words, postings=SNIPPET_POSTINGS)
                     if route.kind == router.SIMILARITY and branch is not None else None)
            order, best = unit_ranking(self._bm25(terms, n, filters, out.chunks if files else None, match))
            out.lists["bm25"] = order[:n]
            out.best.update(best)
            out.lists["summary"] = descriptions.description_units(self.db, text, n, filters)
            out.weights["summary"] = s.weight_bm25 * descriptions.WEIGHT_SHARE
        if mode in ("hybrid", "vector"):
            matches = branch.result() if branch is not None else None
            out.vectors_used = matches is not None and bool(matches)
            out.vector_top = max((m.score for m in matches or []), default=0.0)
            if matches:
                # a partly embedded index: the KNN ranked only the embedded share of the chunks,
                # so its i-th hit is fused as about the (i / share)-th of them all, not as a
                # strong match that crowds out the keywords' (a full index: share 1, no stretch)
                share = vector.embedded_share(self.db)
                if share < 1.0:
                    out.spread["vector"] = 1.0 / share
            order, best = unit_ranking(matches or [])
            out.lists["vector"] = order[:n]
            for uid, m in best.items():
                out.best.setdefault(uid, m)
        if mode == "hybrid":
            asked = signals.Asked(self.db, route, text, terms, n, filters, sig)
            for signal in signals.for_route(route.kind):
                if signal.applies(asked):
                    out.lists[signal.name], best = signal.rank(asked)
                    for uid, m in best.items():
                        out.best.setdefault(uid, m)
                    out.weights[signal.name] = signal.weight_of(s, asked)
            for name, (weight, share) in signals.REWEIGHT.get(route.kind, {}).items():
                out.weights[name] = getattr(s, weight) * share
        return out

    def search_files(
        self, query: str, k: int | None = None, filters: SearchFilters | None = None, mode: str | None = None
    ) -> list[SearchHit]:
        """Files ranked by RRF over each retriever's files, a file ranking at its best unit.

        The nearest chunks of a query spread over many files, so the vector list counts
        FILE_VECTOR_SHARE of its weight here. The reranker judges units, not files: files rank
        as in hybrid mode."""
        mode = mode or self.default_mode
        mode = "hybrid" if mode == RERANK else mode
        k = k or self.settings.k
        with lexical.one_state():
            return self._search_files(query, k, filters, mode)

    def _search_files(self, query: str, k: int, filters: SearchFilters | None, mode: str) -> list[SearchHit]:
        ranked, units, fused, top_unit = self._fused_files(query, k, filters, mode)
        model = self.learned(mode, query)
        if model is not None:
            prep = ranker.prepare(self.db, query, ranked.lists, units, about_tests(query), prose.about_docs(query))
            fused = ranker.rank_files(self.db, model, prep, ranked.lists, units, ranked.chunks, fused, filters)
        out: list[SearchHit] = []
        for f in fused[:k]:
            fu = read.file_unit(self.db, f.key)
            if fu is None:
                continue
            top = top_unit.get(f.key, fu)  # a file only the graph reached has no unit hit
            out.append(SearchHit(fu, f.score, (*f.reasons, f"best {top.qualname or top.name}"),
                                 top.start_line, top.end_line))
        return out

    def _fused_files(self, query: str, k: int, filters: SearchFilters | None, mode: str
                     ) -> tuple[Ranked, dict[int, UnitRef], list[Fused[str]], dict[str, UnitRef]]:
        """The retrievers' units, the files fused from them (tests and prose demoted), and each
        file's best unit."""
        n = max(self.settings.candidates * 2, k * 4)
        ranked = self._rank(query, router.classify(query), n, filters, mode, files=True)
        units = read.get_units(self.db, [uid for ids in ranked.lists.values() for uid in ids]
                               + [m.unit_id for m in ranked.chunks])
        file_lists: dict[str, list[str]] = {}
        top_unit: dict[str, UnitRef] = {}
        for name, ids in ranked.lists.items():
            paths: list[str] = []
            for uid in ids:
                u = units.get(uid)
                if u is not None:
                    paths.append(u.path)
                    top_unit.setdefault(u.path, u)
            file_lists[name] = paths
        weights = dict(ranked.weights)
        if ranked.chunks and filerank.SHARE > 0:  # a file's chunks add up (several beat one)
            pairs = [(units[m.unit_id], m.score) for m in ranked.chunks if m.unit_id in units]
            file_lists["files"] = filerank.aggregate([(u.path, score) for u, score in pairs])
            for u, _ in pairs:
                top_unit.setdefault(u.path, u)
            weights["files"] = self.settings.weight_bm25 * filerank.SHARE
        if "vector" in weights:
            weights["vector"] *= FILE_VECTOR_SHARE
        fused = demote_tests(rrf(file_lists, weights, k=self.settings.rrf_k, labels=LABELS, spread=ranked.spread),
                             lambda path: path, query)
        fused = demote_prose(fused, lambda path: prose.is_prose_unit(path, top_unit[path].language), query)
        return ranked, units, fused, top_unit

    def file_features(self, query: str, filters: SearchFilters | None = None) -> tuple[list[str], np.ndarray]:
        """The learned ranker's candidate files for a query and their features (for training)."""
        ranked, units, fused, _ = self._fused_files(query, self.settings.k, filters, "hybrid")
        prep = ranker.prepare(self.db, query, ranked.lists, units, about_tests(query), prose.about_docs(query))
        return ranker.file_matrix(self.db, prep, ranked.lists, units, ranked.chunks, fused, filters)

    def unit_features(self, query: str, filters: SearchFilters | None = None, model: ranker.Model | None = None
                      ) -> tuple[list[SearchHit], np.ndarray]:
        """The learned ranker's candidate units for a report and their features (for training):
        each candidate as the hit it would be (its best chunk's lines, else its own)."""
        prep, ranked, units, fused, files = self._learned_candidates(query, filters, model)
        cands, x = ranker.unit_matrix(self.db, prep, ranked.lists, units, fused, files)
        hits = []
        for u in cands:
            m = ranked.best.get(u.id)
            hits.append(SearchHit(u, 0.0, (), m.start_line if m else u.start_line, m.end_line if m else u.end_line))
        return hits, x

    def learned(self, mode: str, query: str) -> ranker.Model | None:
        """The learned ranker's model when it orders this query's results (`[search] ranker`)."""
        ranker.check_ranker(self.settings.ranker)
        if mode != "hybrid" or self.settings.ranker != "learned" or not ranker.applies(query):
            return None
        return ranker.load_model(self.settings.ranker_model)

    def similar(self, unit_id: int, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        """Units like the given one: nearest vectors of its chunks, else its words (BM25)."""
        k = k or self.settings.k
        unit = read.get_unit(self.db, unit_id)
        if unit is None:
            return []
        related = {unit.id}
        related.update(retrieval_reads.units_overlapping(self.db, unit.path, unit.start_line, unit.end_line))
        ids = (ranked.span_vector_ids(self.db, unit.path, unit.start_line, unit.end_line)
               if vector.has_vectors(self.db) else [])
        vecs = vector.vectors_by_id(self.db, ids, self.matrix)
        reason = "vector"
        if len(vecs):
            mean = np.mean(vecs, axis=0)
            mean = mean / (np.linalg.norm(mean) or 1.0)
            matches = vector.knn_chunks(self.db, mean, limit=k * 4, filters=filters,
                                        exclude_units=sorted(related), matrix=self.matrix)
        else:
            reason = "bm25"
            text = " ".join(x for x in (unit.name, unit.signature, unit.docstring) if x)
            matches = [m for m in lexical.bm25_chunks(self.db, text, limit=k * 6, filters=filters)
                       if m.unit_id not in related]
        order, best = unit_ranking(matches)
        units = read.get_units(self.db, order[:k])
        return [SearchHit(units[uid], 1.0 / (i + 1), (f"{reason}#{i + 1}", f"similar to {unit.qualname}"),
                          best[uid].start_line, best[uid].end_line)
                for i, uid in enumerate(order[:k]) if uid in units]
