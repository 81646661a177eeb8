"""An aider-style repo map: the signatures of the most referenced units of the most central files.

Files are ranked by PageRank over the file reference graph (CALLS, IMPORTS, INHERITS and
IMPLEMENTS edges between files), personalised toward the files of the query's hits when a query
is given. Each file's units are ranked by how often other files refer to them. A binary search
finds how many (file, unit) entries fit the token budget.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from coderag_tui.retrieval.packing import TokenCounter, estimate_tokens
from coderag_tui.store import retrieval_reads
from coderag_tui.store.backend import StoreBackend

REF_KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS")


@dataclass(frozen=True)
class Tag:
    path: str
    line: int
    depth: int  # 0 for top-level units, 1 for members
    text: str  # the signature
    rank: float


@dataclass
class RepoGraph:
    """The file graph and per-unit reference counts of one index state."""

    paths: list[str]
    edges: dict[tuple[int, int], float]  # (from file idx, to file idx) -> weight
    units: dict[int, list[tuple[int, int, str, int]]]  # file idx -> (line, depth, signature, refs)

    @classmethod
    def load(cls, db: StoreBackend) -> RepoGraph:
        paths: list[str] = []
        idx: dict[int, int] = {}
        for fid, path in retrieval_reads.files_by_path(db):
            idx[fid] = len(paths)
            paths.append(path)
        edges: dict[tuple[int, int], float] = defaultdict(float)
        refs: dict[int, int] = defaultdict(int)
        for src_file, dst_file, dst, n in retrieval_reads.references(db, REF_KINDS):
            if src_file == dst_file or src_file not in idx or dst_file not in idx:
                continue
            edges[(idx[src_file], idx[dst_file])] += float(n) ** 0.5  # many calls, diminishing weight
            refs[int(dst)] += int(n)
        units: dict[int, list[tuple[int, int, str, int]]] = defaultdict(list)
        for uid, fid, pid_kind, kind, name, sig, line in retrieval_reads.outline_rows(db):
            if fid not in idx:
                continue
            depth = 0 if pid_kind in (None, "file", "module") else 1
            if depth > 1:
                continue
            units[idx[fid]].append((int(line), depth, str(sig or f"{kind} {name}"), refs.get(int(uid), 0)))
        return cls(paths, dict(edges), dict(units))


def pagerank(n: int, edges: dict[tuple[int, int], float], personal: np.ndarray | None = None,
             damping: float = 0.85, iterations: int = 50, tol: float = 1e-8) -> np.ndarray:
    """PageRank by power iteration; dangling nodes spread their rank by the personalisation."""
    if n == 0:
        return np.zeros(0)
    p = np.full(n, 1.0 / n) if personal is None or personal.sum() <= 0 else personal / personal.sum()
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    w = np.array(list(edges.values()), dtype=np.float64)
    out_w = np.zeros(n)
    np.add.at(out_w, src, w)
    share = w / np.where(out_w[src] > 0, out_w[src], 1.0) if len(w) else w
    rank = p.copy()
    for _ in range(iterations):
        new = np.zeros(n)
        if len(w):
            np.add.at(new, dst, rank[src] * share)
        dangling = rank[out_w == 0].sum()
        new = damping * (new + dangling * p) + (1 - damping) * p
        if np.abs(new - rank).sum() < tol:
            rank = new
            break
        rank = new
    return rank


def ranked_tags(graph: RepoGraph, focus_paths: Iterable[str] = ()) -> list[Tag]:
    n = len(graph.paths)
    focus = set(focus_paths)
    personal = None
    if focus:
        personal = np.array([10.0 if p in focus else 0.1 for p in graph.paths])
    ranks = pagerank(n, graph.edges, personal)
    tags: list[Tag] = []
    for i, path in enumerate(graph.paths):
        for line, depth, sig, refs in graph.units.get(i, []):
            weight = (1.0 + refs) * (1.0 if depth == 0 else 0.6)
            tags.append(Tag(path, line, depth, sig, float(ranks[i]) * weight))
    tags.sort(key=lambda t: (-t.rank, t.path, t.line))
    return tags


def render(tags: Iterable[Tag]) -> str:
    """Tags grouped by file (files in order of their best tag), units in line order."""
    by_file: dict[str, list[Tag]] = {}
    for t in tags:
        by_file.setdefault(t.path, []).append(t)
    out: list[str] = []
    for path, items in by_file.items():
        out.append(f"{path}:")
        for t in sorted(items, key=lambda t: t.line):
            out.append(f"│{'    ' * t.depth}{t.text}")
    return "\n".join(out)


def fit_map(tags: list[Tag], max_tokens: int, count: TokenCounter = estimate_tokens) -> str:
    """The largest prefix of the ranked tags whose rendering fits max_tokens (binary search)."""
    if max_tokens <= 0 or not tags:
        return ""
    lo, hi, best = 1, len(tags), ""
    while lo <= hi:
        mid = (lo + hi) // 2
        text = render(tags[:mid])
        if count(text) <= max_tokens:
            best, lo = text, mid + 1
        else:
            hi = mid - 1
    return best


def repo_map(db: StoreBackend, max_tokens: int, focus_paths: Iterable[str] = (), graph: RepoGraph | None = None,
             count: TokenCounter = estimate_tokens) -> str:
    return fit_map(ranked_tags(graph or RepoGraph.load(db), focus_paths), max_tokens, count)
