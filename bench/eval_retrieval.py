"""Retrieval eval over real repositories: file- and function-level Acc@1/5/10 of bm25-only,
vector-only, hybrid and (when the search has a reranker) hybrid + rerank, side by side, with the
file-level figures of a whole-file BM25 baseline; per set and overall.

    .venv/bin/python -m bench.eval_retrieval --jsonl /work/shared/eval/swebench-lite-dev.jsonl \
        --jsonl /work/shared/eval/swebench-lite-dev2.jsonl \
        --repos /work/evalrepos --work /tmp/swe-eval [--include '*.py'] [--phase all|index|eval]

Each case is `{instance_id, query, gold_files, gold_hunks}`; its repository is REPOS/<instance_id>/.
One index per checkout lives in WORK/<instance_id>.db (reused on later runs). `--checkouts MAP.json`
(`{instance_id: {"checkout": DIR}}`, DIR under REPOS) points cases at a shared checkout instead, indexed
once as WORK/<DIR>.db: a release sdist standing in for `base_commit`. Such cases are scored at file level
only (approximate): their hunks' line numbers are `base_commit`'s and cannot be placed in another version.
Vectors are shared between checkouts of the same project through WORK/vector_cache.sqlite (keyed by
chunk hash, so a chunk that is the same at two commits is embedded once). Nothing is written into the
repository.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
import time
from pathlib import Path

from bench.harness.wholefile_bm25 import MODE as WHOLEFILE
from bench.harness.wholefile_bm25 import WholeFileBM25
from bench.harness.wholefile_bm25 import file_rank as wholefile_rank
from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import model_identity
from coderag_tui.retrieval.evaluate import (
    KS,
    SHOWN,
    Case,
    CaseResult,
    Hunk,
    accuracy,
    evaluate_case,
    load_cases,
    table,
)
from coderag_tui.retrieval.search import MODES, Searcher
from coderag_tui.service import CodeRag

# the table's rows; "rerank" (hybrid + rerank) is a mode of the search only where a reranker exists
SHOWN_ORDER = ("bm25", "vector", "hybrid", "rerank")
LEARNED = "learned"  # hybrid ordered by the learned ranker ([search] ranker = "learned"); hybrid is the fusion


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
        db.ensure_model_table(model.id, model.dim)
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
            db.write_vectors(found_h, np.stack(found_v), model.id)
        return len(found_h)

    def absorb(self, service: CodeRag) -> None:
        hashes = [r[0] for r in service.db.execute("SELECT hash FROM vectors")]
        vecs = service.db.vectors_for_hashes(hashes)
        self.conn.executemany("INSERT OR IGNORE INTO cache(model, hash, vec) VALUES(?,?,?)",
                              [(self.model, h, v.tobytes()) for h, v in vecs.items()])
        self.conn.commit()


def load_checkouts(path: Path) -> dict[str, str]:
    """instance id -> checkout folder name (under --repos), from `{id: {"checkout": DIR, ...}}`."""
    rows = json.loads(path.read_text())
    out: dict[str, str] = {}
    for case_id, row in rows.items():
        name = row["checkout"] if isinstance(row, dict) else row
        if not isinstance(name, str) or not name or Path(name).name != name:
            raise SystemExit(f"{path}: {case_id}: checkout must be one folder name, got {name!r}")
        out[case_id] = name
    return out


def checkout_of(case: Case, checkouts: dict[str, str]) -> str:
    return checkouts.get(case.id, case.id)


def approximate(case: Case) -> Case:
    """The case without its hunks: their line numbers belong to a commit the checkout is not at."""
    return dataclasses.replace(case, gold_hunks=())


def open_service(case: Case, args: argparse.Namespace, checkouts: dict[str, str]) -> CodeRag:
    settings = Settings()
    include = tuple(args.include) if args.include else ()
    settings = dataclasses.replace(settings, index=dataclasses.replace(settings.index, include=include))
    name = checkout_of(case, checkouts)
    return CodeRag(Path(args.repos) / name, settings, Path(args.work) / f"{name}.db")


def missing_gold(case: Case, root: Path) -> list[str]:
    return [f for f in case.gold_files if not (root / f).is_file()]


def without_func(lines: list[str], modes: list[str]) -> list[str]:
    """A table's mode rows with the function columns shown as not measured (no gold units at all)."""
    width = 15 + 9 * len(KS)  # the mode name, then the file columns
    shown = {SHOWN.get(m, m) for m in modes}
    return [f"{line[:width]}" + "      n/a" * len(KS) if line[:15].strip() in shown else line for line in lines]


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
                   help="bm25, vector, hybrid (the fusion's order), learned (hybrid ordered by the learned ranker) "
                   "and, when the search has a reranker, rerank (hybrid + rerank)")
    p.add_argument("--every", type=int, default=1,
                   help="only every N-th case of each set (in the set's order): a stated, deterministic subsample")
    p.add_argument("--results", help="write per-case ranks as JSON here")
    p.add_argument("--ranker-model", help="with the mode 'learned': a model file, or a folder of leave-one-repository-"
                   "out models <project>.json (bench/train_ranker.py); default: the shipped model")
    p.add_argument("--hunks", help="JSON {instance_id: [{file, old_start, old_lines}]}: gold hunks for cases "
                   "whose set has none (bench/swebench_hunks.py)")
    p.add_argument("--checkouts", help="JSON {instance_id: {checkout: DIR}}: shared checkouts (not at base_commit; "
                   "file level only) for these cases")
    args = p.parse_args()
    checkouts = load_checkouts(Path(args.checkouts)) if args.checkouts else {}
    hunks = json.loads(Path(args.hunks).read_text()) if args.hunks else {}
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    set_of: dict[str, str] = {}
    cases: list[Case] = []
    for jsonl in args.jsonl:
        name = Path(jsonl).name.removesuffix(".jsonl")
        for c in load_cases(Path(jsonl))[:: max(args.every, 1)]:
            if not c.gold_hunks and c.id in hunks:
                c = dataclasses.replace(c, gold_hunks=tuple(Hunk(h["file"], int(h["old_start"]), int(h["old_lines"]))
                                                            for h in hunks[c.id]))
            set_of[c.id] = name
            cases.append(c)
    if args.only:
        cases = [c for c in cases if any(part in c.id for part in args.only.split(","))]
    # checkouts of one project in a row share vectors; cases of one shared checkout in a row share its baseline
    cases.sort(key=lambda c: (c.repo, checkout_of(c, checkouts), c.id))
    modes = [m for m in args.modes.split(",") if m]
    cache = None
    results: list[CaseResult] = []
    indexed: set[str] = set()  # shared checkouts already brought up to date in this run
    baseline: WholeFileBM25 | None = None
    baseline_of = ""  # the checkout the baseline was built from
    t0 = time.perf_counter()
    for n, case in enumerate(cases, 1):
        if args.phase == "eval" and not (work / f"{checkout_of(case, checkouts)}.db").exists():
            log(f"[{n}/{len(cases)}] {case.id}: skipped (no index: --phase eval builds none)")
            continue
        service = open_service(case, args, checkouts)
        if case.id in checkouts:
            lost = missing_gold(case, service.root)
            if lost:
                log(f"[{n}/{len(cases)}] {case.id}: gold files not in {checkouts[case.id]}: {', '.join(lost)}")
            case = approximate(case)
        if args.phase in ("all", "index") and checkout_of(case, checkouts) not in indexed:
            indexed.add(checkout_of(case, checkouts))
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
            fusion = dataclasses.replace(service.settings.search, ranker="fusion")
            embed = None if args.no_embed else searcher.embed_query  # --no-embed: even where vectors exist
            searcher = Searcher(service.db, fusion, embed, searcher.matrix, searcher.reranker, searcher.default_mode)
            r = evaluate_case(searcher, case, [m for m in modes if m != LEARNED])
            if LEARNED in modes:  # hybrid with the learned ranker (per repository: the model trained without it)
                model = Path(args.ranker_model or "")
                model = model / f"{case.id.split('__')[0]}.json" if model.is_dir() else model
                learned = dataclasses.replace(fusion, ranker="learned",
                                              ranker_model=str(model) if args.ranker_model else "")
                other = evaluate_case(Searcher(service.db, learned, embed, searcher.matrix), case, ["hybrid"])
                r.file_rank[LEARNED] = other.file_rank["hybrid"]
                r.unit_rank[LEARNED] = other.unit_rank["hybrid"]
            if baseline is None or baseline_of != checkout_of(case, checkouts):
                if baseline is not None:
                    baseline.close()
                baseline = WholeFileBM25(service)  # the reference point: whole files, no structure
                baseline_of = checkout_of(case, checkouts)
            r.file_rank[WHOLEFILE] = wholefile_rank(baseline.rank(case.query), case.gold_files)
            results.append(r)
            log(f"[{n}/{len(cases)}] {case.id}: file ranks {r.file_rank} unit ranks {r.unit_rank} "
                f"({time.perf_counter() - t:.1f}s)")
        service.close()
    if baseline is not None:
        baseline.close()
    sets = list(dict.fromkeys(set_of[r.id] for r in results))
    groups = [(name, [r for r in results if set_of[r.id] == name]) for name in sets]
    for name in sets:  # per project too where a set runs on shared checkouts: they differ by project
        projects = sorted({r.id.split("__")[0] for r in results if set_of[r.id] == name})
        if len(projects) > 1 and any(r.id in checkouts for r in results if set_of[r.id] == name):
            groups += [(f"{name} / {proj}", [r for r in results if set_of[r.id] == name
                                              and r.id.split("__")[0] == proj]) for proj in projects]
    if len(sets) > 1:
        groups.append(("overall", results))
    for name, part in groups:
        shared = sum(1 for r in part if r.id in checkouts)
        note = ("function level not measured" if shared == len(part)
                else f"function level over the other {len(part) - shared} only")
        print(f"\n== {name}" + (f"  ({shared} on release checkouts, not base_commit: file level approximate, "
                                 f"{note})" if shared else ""))
        lines = table(part, modes).splitlines()
        if not any(r.has_gold_units for r in part):
            lines = without_func(lines, modes)
        lines.insert(-1, f"{WHOLEFILE:<15}" + "".join(f"  {accuracy(part, 'file', WHOLEFILE, k):7.1f}" for k in KS)
                     + "  (BM25 over whole files, file level only)")
        print("\n".join(lines))
    if results and args.results:
        Path(args.results).write_text(json.dumps([{**dataclasses.asdict(r), "set": set_of[r.id],
                                                   "checkout": checkouts.get(r.id, r.id)} for r in results],
                                                 indent=1))
    log(f"done in {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
