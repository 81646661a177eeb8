"""Time-to-half-the-benefit of the embedding order: how early in a long embedding run hybrid
search gains what the vectors bring, embedding in expected-use order against the plain orders.

    python -m bench.bench_embed_order --db INDEX --repo CHECKOUT --questions SWEQA.jsonl \
        [--work DIR] [--fractions 0,5,10,25,50,75,100] [--orders expected,length,id] [--max-tokens 4000]

One full embedding, then copies: the index `--db` (keywords only, never written) is copied into
`--work` and embedded once with the configured model (`CodeRag.embed`, the product's path; its
wall and CPU seconds and the wall clock at each written group are kept beside the copy in
`full.json`, so a second run reuses them). Then, for each order and each fraction f, a copy of
the fully embedded index keeps only the vectors of the first f of the chunks in that order, and
SWE-QA's questions are scored on it with hybrid search:

- evidence recall of `context(question, --max-tokens)` (bench/harness/evidence.py, as
  bench/eval_sweqa.py scores it);
- files: the share of a question's evidence files in the top 5 of `search_files`.

Orders (each over one chunk per hash, as the embedder takes them):
- expected: `embed_order.expected_use_order`, what `embed_index` runs on a long run;
- length: `store.embeddings.pending_chunks` alone (shortest first), the order before it;
- id: chunk id order (files in the order the indexer wrote them).

Time-to-half-the-benefit: the smallest f of the grid where the metric has gained half of its
0% -> 100% gain, given as chunks and as embedding time two ways: f x the full run's wall, and
the share of the text embedded by then (chunks cost about their length; checked against the
measured clock of the expected order, the order the full run took). A "keywords only" row scores
the original index (no model loaded): f = 0 should equal it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.harness import machine_line, timed
from bench.harness.evidence import recall
from coderag_tui.indexing import embed_order
from coderag_tui.models import Progress
from coderag_tui.service import CodeRag
from coderag_tui.store import usage_reads
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.db import open_database
from coderag_tui.store.embeddings import chunk_count, pending_chunks

ORDERS = ("expected", "length", "id")


@dataclass(frozen=True)
class Score:
    recall: float
    files: float  # evidence files in the top 5 files, mean over questions with evidence files
    questions: int
    with_files: int  # questions whose evidence names a file of the index
    seconds: float


@dataclass(frozen=True)
class FullRun:
    """The one full embedding: when, what, how long, and the clock at each written group."""

    date: str
    model: str
    chunks: int
    wall_s: float
    cpu_s: float
    load: tuple[float, float]  # 1-minute load average before and after
    clock: list[tuple[int, float, float]]  # (chunks done, wall s, CPU s)

    def share_at(self, chunks: int) -> float | None:
        """The measured wall at `chunks` done, as a share of the run's embedding wall."""
        if not self.clock:
            return None
        if chunks <= 0:
            return 0.0
        end = self.clock[-1][1]
        return next((wall / end for done, wall, _ in self.clock if done >= chunks), 1.0)


# --------------------------------------------------------------------------- the one embedding


def copy_index(source: Path, target: Path) -> None:
    """A copy of a closed SQLite index, with its WAL when it has one, made by copying files:
    `source` is never opened (even a read-only connection would leave -wal and -shm files
    beside it)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, target)
    wal = Path(f"{source}-wal")
    if wal.is_file() and wal.stat().st_size:
        shutil.copyfile(wal, f"{target}-wal")


def embed_fully(db: Path, repo: Path, work: Path) -> FullRun:
    """The fully embedded copy `work/full.db` and its record (`work/full.json`): made once."""
    full, record_path = work / "full.db", work / "full.json"
    if full.is_file() and record_path.is_file():
        saved = json.loads(record_path.read_text())
        record = FullRun(**{**saved, "load": tuple(saved["load"]), "clock": [tuple(c) for c in saved["clock"]]})
        print(f"reusing {full} (embedded {record.date})")
        return record
    copy_index(db, full)
    service = CodeRag.open(repo, db_path=full)
    clock: list[tuple[int, float, float]] = []  # (chunks done, wall s, CPU s) at each group
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    load_before = os.getloadavg()[0]

    def progress(p: Progress) -> None:
        if p.phase == "embed" and p.done:
            clock.append((p.done, time.perf_counter() - start_wall, time.process_time() - start_cpu))
            if len(clock) % 10 == 0:
                print(f"  embedded {p.done:,} of {p.total:,} in {clock[-1][1]:.0f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)

    run = timed(lambda: service.embed(progress))
    service.close()
    if run.value.stopped or run.value.embedded < run.value.chunks:
        raise SystemExit(f"the full embedding did not finish: {run.value.text()}")
    record = FullRun(time.strftime("%Y-%m-%d %H:%M %Z"), run.value.model, run.value.chunks, run.wall_s, run.cpu_s,
                     (load_before, os.getloadavg()[0]), clock)
    record_path.write_text(json.dumps(asdict(record)))
    return record


# --------------------------------------------------------------------------- orders and copies


def orders(db: StoreBackend) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each order's chunk hashes, first embedded first, and each hash's text length."""
    plain = pending_chunks(db)[0]  # over a keywords-only index: every chunk, one per hash
    facts = usage_reads.chunk_facts(db, [cid for cid, _ in plain])
    expected = embed_order.expected_use_order(plain, facts, usage_reads.file_references(db))
    lengths = {h: facts[cid][2] for cid, h in plain}
    return ({"expected": [h for _, h in expected], "length": [h for _, h in plain],
             "id": [h for _, h in sorted(plain)]}, lengths)


def keep_first(full: Path, target: Path, order: Sequence[str], fraction: float) -> int:
    """`target`: a copy of `full` with only the vectors of the first `fraction` of `order`."""
    copy_index(full, target)
    keep = set(order[: math.ceil(fraction * len(order))])
    db = open_database(target)
    try:
        drop = [int(i) for i, h in db.rows("SELECT id, hash FROM vectors") if h not in keep]
        with db.transaction():
            db.delete_vectors(drop)
        return int(db.scalar("SELECT count(*) FROM vectors", default=0))
    finally:
        db.close()


def score(repo: Path, index: Path, cases: Sequence[dict[str, Any]], max_tokens: int) -> Score:
    service = CodeRag.open(repo, db_path=index)
    started = time.perf_counter()
    indexed = [str(r[0]) for r in service.db.rows("SELECT path FROM files")]
    recalls: list[float] = []
    files: list[float] = []
    for case in cases:
        evidence = list(dict.fromkeys(case.get("evidence") or []))
        if not evidence:
            continue
        question = str(case["question"])
        gold = {p for e in evidence if "/" in e for p in indexed if p == e or p.endswith("/" + e)}
        if gold:
            top = {h.unit.path for h in service.search_files(question, k=5)}
            files.append(len(gold & top) / len(gold))
        recalls.append(recall(evidence, service.context(question, max_tokens=max_tokens).render()))
    service.close()
    return Score(sum(recalls) / max(len(recalls), 1), sum(files) / max(len(files), 1), len(recalls), len(files),
                 time.perf_counter() - started)


# --------------------------------------------------------------------------- the figures


def half_point(points: dict[float, float]) -> float | None:
    """The smallest fraction whose value has gained half of the 0 -> 1 gain (None: no gain)."""
    low, high = points[0.0], points[1.0]
    if high <= low:
        return None
    half = low + (high - low) / 2
    return min(f for f, v in points.items() if v >= half - 1e-12)


def text_share(order: Sequence[str], lengths: dict[str, int], fraction: float) -> float:
    """The share of all the text the first `fraction` of `order` holds (what embedding it costs,
    to first order: the model's work grows with the tokens)."""
    total = sum(lengths.values())
    return sum(lengths[h] for h in order[: math.ceil(fraction * len(order))]) / max(total, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a keywords-only index (copied, never written)")
    ap.add_argument("--repo", type=Path, required=True, help="the checkout the index was made from")
    ap.add_argument("--questions", type=Path, required=True, help="SWE-QA questions (JSONL with evidence)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-embed-order"))
    ap.add_argument("--fractions", default="0,5,10,25,50,75,100", help="percentages; 0 and 100 are always in")
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--limit", type=int, default=None, help="the first N questions only")
    args = ap.parse_args()
    print(machine_line())
    fractions = sorted({0.0, 1.0, *(float(x) / 100 for x in args.fractions.split(",") if x)})
    names = [o for o in args.orders.split(",") if o]
    if unknown := set(names) - set(ORDERS):
        raise SystemExit(f"unknown order(s) {sorted(unknown)}: choose from {', '.join(ORDERS)}")
    cases = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()][: args.limit]
    args.work.mkdir(parents=True, exist_ok=True)

    record = embed_fully(args.db, args.repo, args.work)
    wall, cpu, n = record.wall_s, record.cpu_s, record.chunks
    print(f"full embedding: {n:,} chunks, wall {wall:.0f} s, CPU {cpu:.0f} s ({n / max(cpu, 1e-9):.1f} chunks "
          f"per CPU second), model {record.model}, {record.date}, load {record.load[0]:.1f} before, "
          f"{record.load[1]:.1f} after")

    keywords = args.work / "keywords.db"  # the orders are read from a copy: --db is never opened for writing
    copy_index(args.db, keywords)
    plain_db = open_database(keywords)
    try:
        sequences, lengths = orders(plain_db)
        print(f"orders over {len(lengths):,} chunk hashes ({chunk_count(plain_db):,} chunks)")
    finally:
        plain_db.close()
    base = score(args.repo, keywords, cases, args.max_tokens)
    print(f"keywords only (no vectors, no model): recall {base.recall:.3f}  files {base.files:.3f}  "
          f"(n={base.questions}, {base.with_files} with evidence files, {base.seconds:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)

    table: dict[str, dict[float, Score]] = {name: {} for name in names}
    shared: dict[float, Score] = {}
    print("text: the share of all chunk text embedded by then; clock: the full run's measured share of its wall "
          "(it ran the expected order)")
    print(f"{'order':9s} {'f':>5s} {'chunks':>7s} {'vectors':>7s} {'text':>6s} {'clock':>6s} {'recall':>7s} "
          f"{'files':>6s}")
    for name in names:
        for f in fractions:
            if f in (0.0, 1.0) and f in shared:  # the same copy for every order
                table[name][f] = shared[f]
                continue
            copy = args.work / "part.db"
            vectors = keep_first(args.work / "full.db", copy, sequences[name], f)
            table[name][f] = result = score(args.repo, copy, cases, args.max_tokens)
            if f in (0.0, 1.0):
                shared[f] = result
            clock = record.share_at(math.ceil(f * n)) if name == "expected" else None
            print(f"{name:9s} {f:5.0%} {math.ceil(f * n):7,d} {vectors:7,d} "
                  f"{text_share(sequences[name], lengths, f):6.1%} {'' if clock is None else f'{clock:.1%}':>6s} "
                  f"{result.recall:7.3f} {result.files:6.3f}  "
                  f"({result.seconds:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)

    print("\ntime-to-half-the-benefit (smallest f of the grid with half of the 0% -> 100% gain):")
    for metric in ("recall", "files"):
        for name in names:
            points = {f: getattr(s, metric) for f, s in table[name].items()}
            curve = "  ".join(f"{f:.0%} {v:.3f}" for f, v in sorted(points.items()))
            f_half = half_point(points)
            if f_half is None:
                print(f"  {metric:6s} {name:9s} no gain from vectors ({points[0.0]:.3f} -> {points[1.0]:.3f}): {curve}")
                continue
            chunks = math.ceil(f_half * n)
            share = text_share(sequences[name], lengths, f_half)
            line = (f"  {metric:6s} {name:9s} f {f_half:.0%} = {chunks:,} chunks, {f_half * wall:.0f} s as f x wall, "
                    f"{share * wall:.0f} s as text share {share:.1%}")
            if name == "expected":
                measured = record.share_at(chunks)
                if measured is not None:
                    line += f", {measured * wall:.0f} s measured ({measured:.1%})"
            print(line + f"  [{curve}]")
    print(machine_line())


if __name__ == "__main__":
    main()
