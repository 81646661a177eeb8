"""Retrieval evaluation: file-level and function-level Acc@k of bm25-only, vector-only and hybrid.

A case is a query with gold files and gold hunks (`{file, old_start, old_lines}` as in a diff).
File Acc@k: every gold file is among the top-k files (`Searcher.search_files`).
Function Acc@k: a top-k unit hit (`Searcher.search`) shows a gold unit, the innermost unit that
encloses a changed line of a gold hunk (hunk lines minus 3 lines of diff context at each end).
A hit shows it when it is that unit, or when it encloses it and its best-matching chunk overlaps
it (a chunk of small merged methods), or when both are module-level code of the same file and the
hit's chunk covers the changed line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coderag_tui.models import SearchHit, UnitRef
from coderag_tui.retrieval.search import MODES, Searcher
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend

KS = (1, 5, 10)
SHOWN = {"rerank": "hybrid+rerank"}  # a mode's name in the table, where it differs


@dataclass(frozen=True)
class Hunk:
    file: str
    old_start: int
    old_lines: int

    def changed_lines(self, context: int = 3) -> list[int]:
        first, last = self.old_start, self.old_start + max(self.old_lines, 1) - 1
        if first + context <= last - context:
            return list(range(first + context, last - context + 1))
        return [(first + last) // 2]


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    gold_files: tuple[str, ...]
    gold_hunks: tuple[Hunk, ...] = ()
    repo: str = ""


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        hunks = tuple(Hunk(h["file"], int(h["old_start"]), int(h["old_lines"])) for h in row.get("gold_hunks", []))
        cases.append(Case(row.get("instance_id") or row.get("id") or str(len(cases)), row["query"],
                          tuple(row["gold_files"]), hunks, row.get("repo", "")))
    return cases


@dataclass(frozen=True)
class GoldUnit:
    unit: UnitRef
    lines: tuple[int, ...]  # changed lines inside it


def gold_units(db: StoreBackend, case: Case) -> list[GoldUnit]:
    found: dict[int, tuple[UnitRef, set[int]]] = {}
    for h in case.gold_hunks:
        for line in h.changed_lines():
            units = read.units_at(db, h.file, line)
            if not units:
                continue
            inner = next((u for u in units if u.kind != "file"), units[0])
            found.setdefault(inner.id, (inner, set()))[1].add(line)
    return [GoldUnit(u, tuple(sorted(lines))) for u, lines in found.values()]


def shows(hit: SearchHit, gold: GoldUnit) -> bool:
    h, g = hit.unit, gold.unit
    if h.id == g.id and g.kind != "file":
        return True
    if h.path != g.path:
        return False
    c0, c1 = (hit.chunk_start, hit.chunk_end) if hit.chunk_start else (h.start_line, h.end_line)
    if g.kind == "file":
        return h.kind == "file" and any(c0 <= n <= c1 for n in gold.lines)
    encloses = h.start_line <= g.start_line and g.end_line <= h.end_line
    return encloses and c0 <= g.end_line and g.start_line <= c1


@dataclass
class CaseResult:
    id: str
    file_rank: dict[str, int] = field(default_factory=dict)  # mode -> rank of the last gold file (0: not found)
    unit_rank: dict[str, int] = field(default_factory=dict)  # mode -> rank of the first gold unit hit
    has_gold_units: bool = True


def file_rank(hits: Sequence[SearchHit], gold: Iterable[str]) -> int:
    paths = [h.unit.path for h in hits]
    ranks = [paths.index(g) + 1 if g in paths else 0 for g in gold]
    return 0 if not ranks or 0 in ranks else max(ranks)


def evaluate_case(searcher: Searcher, case: Case, modes: Sequence[str] = MODES, depth: int = 10) -> CaseResult:
    result = CaseResult(case.id)
    golds = gold_units(searcher.db, case)
    result.has_gold_units = bool(golds)
    for mode in modes:
        files = searcher.search_files(case.query, k=depth, mode=mode)
        result.file_rank[mode] = file_rank(files, case.gold_files)
        hits = searcher.search(case.query, k=depth, mode=mode).hits
        rank = 0
        for i, hit in enumerate(hits):
            if any(shows(hit, g) for g in golds):
                rank = i + 1
                break
        result.unit_rank[mode] = rank
    return result


def accuracy(results: Sequence[CaseResult], level: str, mode: str, k: int) -> float:
    pool = [r for r in results if level == "file" or r.has_gold_units]
    if not pool:
        return 0.0
    ranks = [(r.file_rank if level == "file" else r.unit_rank).get(mode, 0) for r in pool]
    return 100.0 * sum(1 for n in ranks if 0 < n <= k) / len(pool)


def table(results: Sequence[CaseResult], modes: Sequence[str] = MODES, ks: Sequence[int] = KS) -> str:
    """File and function Acc@k per mode, side by side."""
    head = "mode           " + "".join(f"  file@{k:<3}" for k in ks) + "".join(f"  func@{k:<3}" for k in ks)
    lines = [head]
    for mode in modes:
        row = f"{SHOWN.get(mode, mode):<15}"
        row += "".join(f"  {accuracy(results, 'file', mode, k):7.1f}" for k in ks)
        row += "".join(f"  {accuracy(results, 'func', mode, k):7.1f}" for k in ks)
        lines.append(row)
    n_func = sum(1 for r in results if r.has_gold_units)
    lines.append(f"({len(results)} queries; {n_func} with gold units for the function level)")
    return "\n".join(lines)
