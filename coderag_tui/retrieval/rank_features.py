"""What the learned ranker sees of each candidate file: the retrievers' ranks and scores, how the
path and its name meet the query's words, where the graph leads from the names the query uses,
the file's size and kind, and a few facts about the query itself.

Candidates are the files the retrievers found (the fusion's list) and the files the graph reaches
from the definitions a query names (the functions its example calls, and what those call,
weighted by how specific each callee is: a helper called from everywhere says little). Every
feature is a number computed the same way at training time (bench/train_ranker.py) and at run
time (ranker.py); a retriever that did not run (vectors, on an index without them) gives zeros.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from coderag_tui.models import UnitRef
from coderag_tui.parsing.extract import is_test_path
from coderag_tui.parsing.identifiers import split_identifier
from coderag_tui.retrieval import filerank, lexical, prose, report
from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.retrieval.fusion import Fused
from coderag_tui.store import rank_reads, rank_values
from coderag_tui.store.backend import StoreBackend

# the retrievers' lists, as search_files fuses them, plus the title's own BM25 list
LISTS = ("bm25", "files", "symbol", "fuzzy", "name", "trace", "summary", "vector", "filed", "title")
QUERY_FEATURES = ("q_report", "q_words", "q_tests", "q_docs", "q_frames", "q_mentions", "q_code")
FILE_FEATURES = (
    *QUERY_FEATURES,
    "fused_rel", "fused_rank",
    *(f"inv_{name}" for name in LISTS), *(f"n_{name}" for name in LISTS),
    "chunk_max", "chunk_sum", "chunk_n",
    "test", "prose", "init", "depth", "docs_dir", "examples_dir",
    "path_hits", "path_frac", "stem_hit", "stem_title", "pkg_match", "pkg_full",
    "g_seed", "g1", "g2",
    "lines", "units", "lang_share", "structured", "cover", "cover_title", "covered", "inbound", "tested",
)
MAX_CANDIDATES = 120  # of the fusion's files; the graph's and the title's best come on top
GRAPH_CANDIDATES = 20
COVER = 20  # candidates (in the fusion's order) whose text is read for the query words it holds
SEEDS = 12  # definitions the query names, followed into the graph
HOP2 = 40  # first-hop callees followed one step further
_CODE = re.compile(r"```|^\s*>>> |^ {4}\S", re.M)
_DOC_DIRS = frozenset({"doc", "docs", "documentation"})
_EXAMPLE_DIRS = frozenset({"example", "examples", "benchmarks", "benchmark", "asv_bench", "tutorials", "galleries"})


@dataclass(frozen=True)
class QueryFacts:
    report: bool
    title: str  # a report's first line (the whole query otherwise)
    words: frozenset[str]  # every search word of the query (stop words out), lower case
    title_words: frozenset[str]
    values: tuple[float, ...]  # QUERY_FEATURES
    modules: tuple[tuple[str, ...], ...] = ()  # dotted names the query writes (`sklearn.linear_model`), as parts


def query_facts(query: str, sig: report.ReportSignals | None, mentions: int, tests: bool, docs: bool) -> QueryFacts:
    text = sig.text if sig is not None else query
    is_report = filerank.is_report(query)
    title = query.strip().split("\n", 1)[0] if is_report else query
    words = frozenset(lexical.query_terms(text, 400))
    values = (float(is_report), math.log1p(len(query.split())), float(tests), float(docs),
              float(min(len(sig.frames), 5)) if sig is not None else 0.0, float(min(mentions, 10)),
              float(bool(_CODE.search(query))))
    modules = tuple(tuple(m.split(".")) for m in (sig.modules if sig is not None else ()))
    return QueryFacts(is_report, title, words, frozenset(lexical.query_terms(title, 100)), values, modules)


def package_match(path: str, modules: Sequence[tuple[str, ...]]) -> tuple[int, bool]:
    """How many leading folders (and the file's stem) of the path a dotted name the query writes
    spells (`sklearn.linear_model.X` and `sklearn/linear_model/_logistic.py`: 2), and whether it
    spells all of the file's folders (the file lies in the package the report imports from)."""
    parts = _shape(path).bare_parts
    best = 0
    for mod in modules:
        n = 0
        for a, b in zip(parts, mod, strict=False):
            if a != b:
                break
            n += 1
        best = max(best, n)
    return best, best >= len(parts) - 1 > 0


@dataclass(frozen=True)
class _Shape:
    """What the features read of a path alone."""

    parts: tuple[str, ...]
    bare_parts: tuple[str, ...]  # the parts without the file's extension
    name: str
    stem: str
    folders: frozenset[str]  # lower case
    words: frozenset[str]


@functools.lru_cache(maxsize=65536)
def _shape(path: str) -> _Shape:
    pure = PurePosixPath(path)
    return _Shape(pure.parts, pure.with_suffix("").parts, pure.name, pure.stem.lower(),
                  frozenset(part.lower() for part in pure.parts[:-1]), frozenset(path_words(path)))


def path_words(path: str) -> set[str]:
    """The words of a path's folders and file name (`db/models/query_utils.py` -> db, models,
    query, utils, query_utils), extension aside."""
    p = PurePosixPath(path)
    parts = [*p.parts[:-1], p.stem]
    out: set[str] = set()
    for part in parts:
        out.add(part.lower())
        out.update(w.lower() for w in split_identifier(part))
    return {w for w in out if len(w) >= 2}


def list_ranks(ids: Sequence[int], units: Mapping[int, UnitRef]) -> tuple[dict[str, int], dict[str, int]]:
    """A unit list as files: each file's rank (1-based, at its best unit) and its number of units."""
    rank: dict[str, int] = {}
    count: dict[str, int] = {}
    for uid in ids:
        u = units.get(uid)
        if u is None:
            continue
        if u.path not in rank:
            rank[u.path] = len(rank) + 1
        count[u.path] = count.get(u.path, 0) + 1
    return rank, count


def path_ranks(paths: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    rank: dict[str, int] = {}
    count: dict[str, int] = {}
    for p in paths:
        rank.setdefault(p, len(rank) + 1)
        count[p] = count.get(p, 0) + 1
    return rank, count


@dataclass(frozen=True)
class GraphReach:
    """What the graph reaches from the units a query names, per file and per unit: their callees
    (first hop) and the callees' callees (second), each counting 1 / log2(1 + its callers), so
    specific code the example reaches counts, helpers called from everywhere little."""

    seeds: tuple[int, ...]
    hop1: dict[str, float]
    hop2: dict[str, float]
    unit_hop1: dict[int, float]
    unit_hop2: dict[int, float]


def graph_reach(db: StoreBackend, lists: Mapping[str, Sequence[int]], units: Mapping[int, UnitRef]) -> GraphReach:
    seeds = list(lists.get("symbol", [])[:SEEDS])
    seeds += [uid for uid in lists.get("trace", []) if uid in units and units[uid].kind != "file"][:SEEDS]
    seeds = list(dict.fromkeys(seeds))
    hop1: dict[str, float] = {}
    hop2: dict[str, float] = {}
    first: dict[int, float] = {}
    second: dict[int, float] = {}
    if seeds:
        for _src, dst, path, fan in rank_reads.callees_of(db, seeds):
            if dst in seeds:
                continue
            w = 1.0 / math.log2(1 + fan)
            first[dst] = max(first.get(dst, 0.0), w)
            hop1[path] = hop1.get(path, 0.0) + w
        follow = sorted(first, key=lambda d: -first[d])[:HOP2]
        for src, dst, path, fan in rank_reads.callees_of(db, follow):
            if dst in first or dst in seeds:
                continue
            w = first.get(src, 0.0) / math.log2(1 + fan)
            second[dst] = max(second.get(dst, 0.0), w)
            hop2[path] = hop2.get(path, 0.0) + w
    return GraphReach(tuple(seeds), hop1, hop2, first, second)


def coverage(db: StoreBackend, facts: QueryFacts, paths: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Per file, the share of the query's words (each weighted by its rarity) and of its title's
    words the file's text holds anywhere, not only in its best chunks."""
    df, total = lexical.doc_freqs(db, sorted(facts.words))
    idf = {w: math.log((1 + total) / (1 + n)) for w, n in df.items()}
    if not idf:
        return {}
    whole = sum(idf.values())
    title = [w for w in facts.title_words if w in idf]
    out: dict[str, tuple[float, float]] = {}
    test = WordTest(idf)
    if test.other:  # words the runs cannot test: the files' whole text
        texts: dict[str, list[str]] = {}
        for path, _start, _end, text in rank_reads.chunks_of_files(db, paths):
            texts.setdefault(str(path), []).append(str(text))
        found = {p: test.held("\n".join(parts).lower()) for p, parts in texts.items()}
    else:  # each file's distinct runs, stored at index time
        found = {p: test.held_in_runs(joined) for p, joined in rank_values.runs_of_files(db, paths).items()}
    for path in paths:  # substrings: sub-words of names count
        held = found.get(path)
        if held is not None:
            out[path] = (sum(idf[w] for w in held) / whole,
                         sum(1 for w in title if w in held) / len(title) if title else 0.0)
    return out


class WordTest:
    """Which of some words occur in a text as substrings (`w in text`), found faster.

    A word whose ASCII characters are letters and digits lies inside one run of such characters
    (and non-ASCII ones), so it occurs in the text exactly when it is one of the text's distinct
    runs or occurs in them joined by spaces: much shorter than a source file, where the same
    names come back on every line. The runs are cut in UTF-8, where a substring of the text is a
    substring of its bytes; no byte of a non-ASCII character ends a run (a superset of the
    letters keeps the test exact)."""

    def __init__(self, words: Iterable[str]) -> None:
        self.plain: list[tuple[str, bytes]] = []
        self.other: list[str] = []  # words with other characters (query_terms makes none): tested as they are
        for w in words:
            if w.isalnum() or all(c.isalnum() for c in w if c.isascii()):
                self.plain.append((w, w.encode("utf-8", "surrogatepass")))
            else:
                self.other.append(w)

    def held(self, text: str) -> set[str]:
        found = {w for w in self.other if w in text}
        if self.plain:
            found |= self.held_in_runs(b" ".join(rank_values.word_runs(text)))
        return found

    def held_in_runs(self, joined: bytes) -> set[str]:
        """The plain words held by a text whose distinct runs, joined by spaces, are `joined`
        (a plain word holds no space: it is in the text exactly when it is in one run)."""
        return {w for w, b in self.plain if b in joined}


def file_candidates(
    db: StoreBackend,
    facts: QueryFacts,
    lists: Mapping[str, Sequence[int]],
    units: Mapping[int, UnitRef],
    chunks: Sequence[ChunkMatch],
    fused: Sequence[Fused[str]],
    title_paths: Sequence[str],
    graph: GraphReach,
) -> tuple[list[str], np.ndarray]:
    """The candidate files (the fusion's order first) and their FILE_FEATURES rows.

    The rows are built a feature at a time over all candidates (the same Python floats as ever,
    rounded once to float32); what a path alone decides is kept per path."""
    seeds, hop1, hop2 = graph.seeds, graph.hop1, graph.hop2
    candidates = [f.key for f in fused[:MAX_CANDIDATES]]
    seen = set(candidates)
    graph_best = sorted(set(hop1) | set(hop2), key=lambda p: -(hop1.get(p, 0.0) + hop2.get(p, 0.0)))
    for p in [*graph_best[:GRAPH_CANDIDATES], *title_paths[:GRAPH_CANDIDATES]]:
        if p not in seen:
            seen.add(p)
            candidates.append(p)
    top = max((m.score for m in chunks), default=0.0) or 1.0
    best: dict[str, float] = {}
    decayed: dict[str, float] = {}  # filerank.aggregate's sums, in the same order
    n_chunks: dict[str, int] = {}
    for m in chunks:
        u = units.get(m.unit_id)
        if u is None:
            continue
        path = u.path
        j = n_chunks.get(path, 0)
        n_chunks[path] = j + 1
        if j:
            best[path] = max(best[path], m.score)
            decayed[path] += max(m.score, 0.0) * filerank.DECAY**j
        else:
            best[path] = max(0.0, m.score)
            decayed[path] = 0.0 + max(m.score, 0.0) * filerank.DECAY**j
    ranks: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for name in LISTS:
        if name == "files":  # the files by their decayed sums, best first (filerank.aggregate)
            ranks[name] = path_ranks(sorted(decayed, key=lambda p: -decayed[p]))
        elif name == "title":
            ranks[name] = path_ranks(title_paths)
        else:
            ranks[name] = list_ranks(lists.get(name, ()), units)
    top_decayed = max(decayed.values(), default=0.0) or 1.0
    symbol_files = {units[uid].path for uid in seeds if uid in units}
    seed_count = {p: sum(1 for uid in seeds if uid in units and units[uid].path == p) for p in symbol_files}
    sizes = rank_reads.file_sizes(db, candidates)
    lead = [sizes[p][2] for p in candidates[:30] if p in sizes]
    lead_count = {lang: lead.count(lang) for lang in set(lead)}
    cover = coverage(db, facts, candidates[:COVER])
    inbound = rank_values.inbound_files(db, candidates)
    n = len(candidates)
    cols: list[list[float]] = [[v] * n for v in facts.values]
    last = max(len(fused), MAX_CANDIDATES) + 1
    fused_at = {f.key: (i + 1, f.score) for i, f in enumerate(fused)}
    top_fused = fused[0].score if fused and fused[0].score > 0 else 1.0
    at_score = [fused_at.get(path, (last, 0.0)) for path in candidates]
    cols.append([score / top_fused for _, score in at_score])
    cols.append([math.log2(1 + at) for at, _ in at_score])
    for name in LISTS:
        rank = ranks[name][0]
        cols.append([1.0 / rank[path] if path in rank else 0.0 for path in candidates])
    for name in LISTS:
        count = ranks[name][1]
        cols.append(_log1p_counts([count.get(path, 0) for path in candidates]))
    cols.append([best.get(path, 0.0) / top for path in candidates])
    cols.append([decayed.get(path, 0.0) / top_decayed for path in candidates])
    cols.append(_log1p_counts([n_chunks.get(path, 0) for path in candidates]))
    size = [sizes.get(path, (0, 0, "text", False)) for path in candidates]
    flags = [_path_flags(path) for path in candidates]
    cols.append([f[0] for f in flags])  # test
    cols.append([float(prose.is_prose_unit(path, s[2])) for path, s in zip(candidates, size, strict=True)])
    cols.extend([f[k] for f in flags] for k in range(1, 5))  # init, depth, docs_dir, examples_dir
    shapes = [_shape(path) for path in candidates]
    hits = [len(shape.words & facts.words) for shape in shapes]
    cols.append([float(h) for h in hits])
    cols.append([h / max(len(shape.words), 1) for h, shape in zip(hits, shapes, strict=True)])
    cols.append([float(shape.stem in facts.words) for shape in shapes])
    cols.append([float(shape.stem in facts.title_words) for shape in shapes])
    matched = [_spelled(shape.bare_parts, modules) for shape in shapes] if (modules := _trie(facts.modules)) else [0] * n
    cols.append([float(m) for m in matched])
    cols.append([float(m >= len(shape.bare_parts) - 1 > 0) for m, shape in zip(matched, shapes, strict=True)])
    cols.append([float(seed_count.get(path, 0)) for path in candidates])
    cols.append([hop1.get(path, 0.0) for path in candidates])
    cols.append([hop2.get(path, 0.0) for path in candidates])
    cols.append([math.log1p(s[0]) for s in size])
    cols.append([math.log1p(s[1]) for s in size])
    cols.append([lead_count.get(s[2], 0) / max(len(lead), 1) for s in size])
    cols.append([float(s[3]) for s in size])
    no_cover = (0.0, 0.0)
    cols.append([cover.get(path, no_cover)[0] for path in candidates])
    cols.append([cover.get(path, no_cover)[1] for path in candidates])
    cols.append([float(path in cover) for path in candidates])
    no_inbound = (0, 0)
    cols.append(_log1p_counts([inbound.get(path, no_inbound)[0] for path in candidates]))
    cols.append(_log1p_counts([inbound.get(path, no_inbound)[1] for path in candidates]))
    # float64 holds each Python float exactly; one rounding to float32, as assigning a row did
    rows = np.ascontiguousarray(np.array(cols, dtype=np.float64).reshape(len(FILE_FEATURES), n).T,
                                dtype=np.float32)
    return candidates, rows


_LOG1P = [math.log1p(i) for i in range(4096)]  # math.log1p of the small counts


def _log1p_counts(counts: Sequence[int]) -> list[float]:
    """math.log1p of each count, the small ones from a table."""
    return [_LOG1P[c] if 0 <= c < len(_LOG1P) else math.log1p(c) for c in counts]


_Trie = dict[str, "_Trie"]


def _trie(modules: Sequence[tuple[str, ...]]) -> _Trie:
    """The dotted names a query writes, as a tree of their parts."""
    root: _Trie = {}
    for mod in modules:
        node = root
        for part in mod:
            node = node.setdefault(part, {})
    return root


def _spelled(parts: tuple[str, ...], trie: _Trie) -> int:
    """How many leading parts of a path one of the trie's names spells (package_match's count)."""
    n = 0
    node = trie
    for part in parts:
        node = node.get(part)  # type: ignore[assignment]
        if node is None:
            break
        n += 1
    return n


@functools.lru_cache(maxsize=65536)
def _path_flags(path: str) -> tuple[float, float, float, float, float]:
    """test, init, depth, docs_dir, examples_dir: what a path alone says of its file."""
    shape = _shape(path)
    return (float(is_test_path(path)), float(shape.name == "__init__.py"), float(len(shape.parts) - 1),
            float(bool(shape.folders & _DOC_DIRS)), float(bool(shape.folders & _EXAMPLE_DIRS)))
