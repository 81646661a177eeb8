"""Retrieval eval over real repositories: file- and function-level Acc@1/5/10 of bm25-only,
vector-only, hybrid and (when the search has a reranker) hybrid + rerank, side by side, with the
file-level figures of a whole-file BM25 baseline; per set and overall.

    .venv/bin/python bench/eval_retrieval.py --jsonl /work/shared/eval/swebench-lite-dev.jsonl \
        --jsonl /work/shared/eval/swebench-lite-dev2.jsonl \
        --repos /work/evalrepos --work /tmp/swe-eval [--include '*.py'] [--phase all|index|eval]

Each case is `{instance_id, query, gold_files, gold_hunks}`; its repository is REPOS/<instance_id>/.
One index per checkout lives in WORK/<instance_id>.db (reused on later runs). Vectors are shared
between checkouts of the same project through WORK/vector_cache.sqlite (keyed by chunk hash, so a
chunk that is the same at two commits is embedded once). Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.wholefile_bm25 import MODE as WHOLEFILE  # noqa: E402
from bench.wholefile_bm25 import WholeFileBM25  # noqa: E402
from bench.wholefile_bm25 import file_rank as wholefile_rank  # noqa: E402
from coderag_tui.config import Settings  # noqa: E402
from coderag_tui.indexing.embedder import model_identity  # noqa: E402
from coderag_tui.retrieval.evaluate import (  # noqa: E402
    KS,
    Case,
    CaseResult,
    accuracy,
    evaluate_case,
    load_cases,
    table,
)
from coderag_tui.retrieval.search import MODES, Searcher  # noqa: E402
from coderag_tui.service import CodeRag  # noqa: E402
from coderag_tui.store.embeddings import ensure_model_table, vectors_for_hashes, write_vectors  # noqa: E402

# the table's rows; "rerank" (hybrid + rerank) is a mode of the search only where a reranker exists
SHOWN_ORDER = ("bm25", "vector", "hybrid", "rerank")


class VectorCache:
    """hash -> vector, shared between the indexes of one eval run (stdlib sqlite3, no extension)."""

    def __init__(self, path: Path, model: str) -> None:
        self.conn = sqlite3.connect(str(path))
        self.conn.execute("CREATE TABLE IF NOT EXISTS cache(model TEXT, hash TEXT, vec BLOB, PRIMARY KEY(model, hash))")
        self.model = model

    def prefill(self, service: CodeRag) -> int:
        """Write cached vectors for the index's chunks that have none."""
        import numpy as np

        db = service.db
        model = service._retrieval().model(service.settings.embed)
        ensure_model_table(db, model.id, model.dim)
        missing = [r[0] for r in db.execute(
            "SELECT DISTINCT c.hash FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash=c.hash)")]
        found_h: list[str] = []
        found_v: list[np.ndarray] = []
        for i in range(0, len(missing), 500):
            part = missing[i : i + 500]
            marks = ",".join("?" * len(part))
            for h, blob in self.conn.execute(
                f"SELECT hash, vec FROM cache WHERE model=? AND hash IN ({marks})", (self.model, *part)):
                found_h.append(h)
                found_v.append(np.frombuffer(blob, dtype=np.float32))
        if found_h:
            write_vectors(db, found_h, np.stack(found_v), model.id)
        return len(found_h)

    def absorb(self, service: CodeRag) -> None:
        hashes = [r[0] for r in service.db.execute("SELECT hash FROM vectors")]
        vecs = vectors_for_hashes(service.db, hashes)
        self.conn.executemany("INSERT OR IGNORE INTO cache(model, hash, vec) VALUES(?,?,?)",
                              [(self.model, h, v.tobytes()) for h, v in vecs.items()])
        self.conn.commit()


def open_service(case: Case, args: argparse.Namespace) -> CodeRag:
    settings = Settings()
    include = tuple(args.include) if args.include else ()
    settings = dataclasses.replace(settings, index=dataclasses.replace(settings.index, include=include))
    root = Path(args.repos) / case.id
    return CodeRag(root, settings, Path(args.work) / f"{case.id}.db")


def complete_vectors(service: CodeRag) -> bool:
    db = service.db
    if db.get_meta("embed_model") != model_identity(service.settings.embed):
        return False
    return not db.scalar("SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                         "(SELECT 1 FROM vectors v WHERE v.hash = c.hash)", default=0)


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jsonl", required=True, action="append", help="a set of cases (repeatable)")
    p.add_argument("--repos", required=True, help="folder with one checkout per instance id")
    p.add_argument("--work", required=True, help="folder for the indexes, vector cache and results")
    p.add_argument("--include", action="append", help="index only these globs (repeatable), e.g. '*.py'")
    p.add_argument("--phase", choices=("all", "index", "eval"), default="all")
    p.add_argument("--no-embed", action="store_true", help="keywords only (vector-only scores 0)")
    p.add_argument("--only", help="only cases whose id contains this text (comma-separated: any of them)")
    p.add_argument("--require-vectors", action="store_true",
                   help="evaluate only checkouts whose every chunk has a vector")
    p.add_argument("--modes", default=",".join(m for m in SHOWN_ORDER if m in MODES),
                   help="bm25, vector, hybrid and, when the search has a reranker, rerank (hybrid + rerank)")
    p.add_argument("--every", type=int, default=1,
                   help="only every N-th case of each set (in the set's order): a stated, deterministic subsample")
    p.add_argument("--results", help="write per-case ranks as JSON here")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    set_of: dict[str, str] = {}
    cases: list[Case] = []
    for jsonl in args.jsonl:
        name = Path(jsonl).name.removesuffix(".jsonl")
        for c in load_cases(Path(jsonl))[:: max(args.every, 1)]:
            set_of[c.id] = name
            cases.append(c)
    if args.only:
        cases = [c for c in cases if any(part in c.id for part in args.only.split(","))]
    cases.sort(key=lambda c: (c.repo, c.id))  # checkouts of one project in a row share vectors
    modes = [m for m in args.modes.split(",") if m]
    cache = None
    results: list[CaseResult] = []
    t0 = time.perf_counter()
    for n, case in enumerate(cases, 1):
        service = open_service(case, args)
        if args.phase in ("all", "index"):
            t = time.perf_counter()
            s = service.index()
            log(f"[{n}/{len(cases)}] {case.id}: indexed {s.files_seen} files, {service.status().chunks} chunks "
                f"in {time.perf_counter() - t:.1f}s")
            if not args.no_embed:
                if cache is None:
                    cache = VectorCache(work / "vector_cache.sqlite", service._retrieval().model(
                        service.settings.embed).id)
                reused = cache.prefill(service)
                t = time.perf_counter()
                e = service.embed()
                cache.absorb(service)
                log(f"[{n}/{len(cases)}] {case.id}: {reused} vectors from the cache, embedded {e.embedded} "
                    f"in {time.perf_counter() - t:.1f}s ({e.rate:.1f}/s)")
        if args.phase in ("all", "eval") and args.require_vectors and not complete_vectors(service):
            log(f"[{n}/{len(cases)}] {case.id}: skipped (its vectors are not complete)")
        elif args.phase in ("all", "eval"):
            t = time.perf_counter()
            searcher = service.searcher()
            if args.no_embed:  # keywords, symbols and the graph only, even where vectors exist
                searcher = Searcher(service.db, service.settings.search, None)
            r = evaluate_case(searcher, case, modes)
            baseline = WholeFileBM25(service)  # the reference point: whole files, no structure
            r.file_rank[WHOLEFILE] = wholefile_rank(baseline.rank(case.query), case.gold_files)
            baseline.close()
            results.append(r)
            log(f"[{n}/{len(cases)}] {case.id}: file ranks {r.file_rank} unit ranks {r.unit_rank} "
                f"({time.perf_counter() - t:.1f}s)")
        service.close()
    sets = list(dict.fromkeys(set_of[r.id] for r in results))
    for name in [*sets, "overall"] if len(sets) > 1 else sets:
        part = [r for r in results if name == "overall" or set_of[r.id] == name]
        print(f"\n== {name}")
        lines = table(part, modes).splitlines()
        lines.insert(-1, f"{WHOLEFILE:<15}" + "".join(f"  {accuracy(part, 'file', WHOLEFILE, k):7.1f}" for k in KS)
                     + "  (BM25 over whole files, file level only)")
        print("\n".join(lines))
    if results and args.results:
        Path(args.results).write_text(json.dumps([{**dataclasses.asdict(r), "set": set_of[r.id]} for r in results],
                                                 indent=1))
    log(f"done in {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
