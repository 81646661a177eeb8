"""One-shot vector search: sqlite-vec's own KNN against loading every vector into memory first.

    python -m bench.bench_oneshot [--vectors 70000] [--dim 384] [--runs 5] [--work DIR]
        [--reuse] [--cli N] [--baseline OTHER_SOURCE_TREE]

A one-shot command (`coderag search`, `context`, `ask`) opens the index, answers one question
and exits, so an in-memory copy of the vectors is loaded for a single KNN. This builds an index
of `--vectors` synthetic chunks (real rows through the store: files, units, chunks, keywords)
with random unit vectors in the sqlite-vec table, then times, alternating the two ways in one
run, a fresh connection's first vector search:

- sqlite-vec: `knn_chunks` with no copy (what one-shot commands do now);
- in memory: `knn_chunks` with a fresh VectorMatrix (load every vector, then KNN: what they did).

and the same for a whole hybrid search (`Searcher.search`, the query's vector given, so no
model is loaded). With `--cli N` it then times N whole `coderag search` processes (the query
model loaded, sqlite-vec's scan), wall and CPU (user + system, every thread), alternated with a
`--baseline` source tree's when one is given. For the KNN it reports how often each way returns the exact top 10 (numpy
over the same vectors): sqlite-vec scans exactly; the in-memory copy ranks by binary codes
above 60,000 vectors, which random vectors (no structure) defeat far more than real ones.
The index is made in WORK (default: a temporary folder) and deleted after.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import ROOT, machine_line
from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import model_identity
from coderag_tui.parsing.extract import content_hash
from coderag_tui.parsing.records import ParsedChunk, ParsedFile, ParsedUnit
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.search import Searcher
from coderag_tui.retrieval.vector import knn_chunks
from coderag_tui.store.db import open_database
from coderag_tui.store.write import FileMeta, write_file

PER_FILE = 100


def synthetic_file(n: int, per_file: int) -> ParsedFile:
    """A file of `per_file` one-line functions, each its own chunk."""
    def unit(index: int, kind: str, name: str, signature: str, start: int, end: int) -> ParsedUnit:
        return ParsedUnit(index=index, parent=None if index == 0 else 0, kind=kind, name=name, qualname=name,
                          scope=(), signature=signature, params=(), return_type="", decorators=(),
                          docstring="", start_line=start, end_line=end)

    units = [unit(0, "file", f"mod{n}.py", "", 1, per_file)]
    chunks = []
    for j in range(per_file):
        name = f"handler_{n}_{j}"
        text = f"def {name}(request): return dispatch(request, {j})"
        units.append(unit(j + 1, "function", name, f"def {name}(request)", j + 1, j + 1))
        chunks.append(ParsedChunk(j + 1, j + 1, ("function_definition",), j + 1, (name,), text,
                                  f"# pkg/mod{n}.py\n{text}", content_hash(text.encode()), len(text)))
    return ParsedFile(f"pkg/mod{n}.py", "python", tuple(units), (), tuple(chunks), per_file, False, True)


def build(db_path: Path, count: int, dim: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Write the index; returns the chunk ids and their unit vectors (row i: chunk ids[i])."""
    db = open_database(db_path)
    with db.transaction():
        for n in range((count + PER_FILE - 1) // PER_FILE):
            parsed = synthetic_file(n, min(PER_FILE, count - n * PER_FILE))
            write_file(db, parsed, FileMeta(parsed.path, f"h{n}", 0, 0))
    # the bundled model's identity: random vectors, but `coderag search` then runs its whole real path
    model_id = model_identity(Settings().embed)
    db.ensure_model_table(model_id, dim)
    rows = db.rows("SELECT id, hash FROM chunks ORDER BY id")
    ids = np.asarray([int(i) for i, _ in rows])
    hashes = [str(h) for _, h in rows]
    vecs = rng.standard_normal((len(hashes), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for i in range(0, len(hashes), 5000):
        db.write_vectors(hashes[i : i + 5000], vecs[i : i + 5000], model_id)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return ids, vecs


def stored(db_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The chunk ids and vectors of an index `build` made (each chunk has its own hash)."""
    db = open_database(db_path)
    try:
        rows = db.rows("SELECT c.id, t.embedding FROM chunks c JOIN vectors v ON v.hash = c.hash "
                       "JOIN vec_chunks t ON t.rowid = v.id ORDER BY c.id")
    finally:
        db.close()
    vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return np.asarray([int(r[0]) for r in rows]), vecs


def one_shot(db_path: Path, query: np.ndarray, in_memory: bool, whole: bool) -> tuple[float, list[object]]:
    """Seconds of a fresh connection's first vector search, and its top 10 (hits' (path, line),
    or chunk ids)."""
    db = open_database(db_path)
    try:
        started = time.perf_counter()
        matrix = VectorMatrix() if in_memory else None
        if whole:
            searcher = Searcher(db, Settings().search, lambda text: query, matrix)
            hits = searcher.search("dispatch the request to its handler", 10).hits
            top: list[object] = [(h.unit.path, h.unit.start_line) for h in hits]
        else:
            top = [m.chunk_id for m in knn_chunks(db, query, limit=10, matrix=matrix)]
        return time.perf_counter() - started, top
    finally:
        db.close()


def cli_once(tree: Path, db_path: Path, work: Path) -> tuple[float, float] | None:
    """Wall and CPU seconds (user + system, every thread) of one `coderag search` process run
    from the source tree `tree`, or None when it failed."""
    command = [sys.executable, "-m", "coderag_tui", "search", "dispatch the request to its handler",
               "--repo", str(work), "--db", str(db_path)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode compiled
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd=tree)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1) or "vector#" not in done.stdout:
        print(f"coderag search from {tree} failed or used no vectors: {done.stderr.strip()[-300:]}")
        return None
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cli_runs(db_path: Path, work: Path, runs: int, baseline: str) -> None:
    """Whole `coderag search` processes (query model loaded, sqlite-vec KNN), this tree and
    optionally a baseline tree alternated, after one untimed warm-up each (disk cache, the
    optimised query graph written on first use)."""
    trees = [ROOT] + ([Path(baseline).resolve()] if baseline else [])
    for tree in trees:
        cli_once(tree, db_path, work)
    got: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
    for run in range(runs):
        for tree in trees if run % 2 == 0 else trees[::-1]:
            one = cli_once(tree, db_path, work)
            if one is not None:
                got[tree].append(one)
    for tree in trees:
        if not got[tree]:
            continue
        walls, cpus = [w for w, _ in got[tree]], [c for _, c in got[tree]]
        print(f"whole `coderag search` from {tree}: wall median {statistics.median(walls) * 1000:.0f} ms "
              f"(min {min(walls) * 1000:.0f}), CPU median {statistics.median(cpus) * 1000:.0f} ms "
              f"(min {min(cpus) * 1000:.0f}) of {len(walls)}")
    if baseline and got[trees[0]] and got[trees[1]]:
        ours = statistics.median(c for _, c in got[trees[0]])
        base = statistics.median(c for _, c in got[trees[1]])
        wo = statistics.median(w for w, _ in got[trees[0]])
        wb = statistics.median(w for w, _ in got[trees[1]])
        print(f"this tree / baseline: CPU {ours / base:.2f}x, wall {wo / wb:.2f}x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vectors", type=int, default=70_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--work", help="folder for the index (default: a temporary one, removed after)")
    p.add_argument("--cli", type=int, default=3, help="also time this many whole `coderag search` runs")
    p.add_argument("--baseline", default="", help="a source tree (e.g. a checkout of main) whose "
                   "`coderag search` is timed alternately with this one")
    p.add_argument("--reuse", action="store_true", help="keep WORK's index when it exists (no rebuild)")
    args = p.parse_args()
    print(machine_line())
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="coderag-oneshot-"))
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "oneshot.db"
    rng = np.random.default_rng(7)
    try:
        started = time.perf_counter()
        if args.reuse and db_path.is_file():
            ids, vecs = stored(db_path)
        else:
            db_path.unlink(missing_ok=True)
            ids, vecs = build(db_path, args.vectors, args.dim, rng)
        print(f"{'reused' if args.reuse else 'built'} {len(ids):,} chunks with {args.dim}-dim vectors in {time.perf_counter() - started:.1f}s "
              f"({db_path.stat().st_size / 2**20:.0f} MiB)")
        for whole, label in ((False, "vector KNN (knn_chunks, top 10)"), (True, "hybrid search (Searcher.search)")):
            times: dict[bool, list[float]] = {False: [], True: []}
            exact = {False: 0, True: 0}
            for run in range(args.runs):
                query = rng.standard_normal(args.dim).astype(np.float32)
                truth = [int(i) for i in ids[np.argsort(-(vecs @ (query / np.linalg.norm(query))))[:10]]]
                for in_memory in ((False, True) if run % 2 == 0 else (True, False)):  # share the noise
                    seconds, top = one_shot(db_path, query, in_memory, whole)
                    times[in_memory].append(seconds)
                    exact[in_memory] += top == truth
            vec, mem = statistics.median(times[False]), statistics.median(times[True])
            print(f"{label}: sqlite-vec {vec * 1000:.0f} ms, load-all in memory {mem * 1000:.0f} ms "
                  f"(median of {args.runs}; in-memory / sqlite-vec = {mem / vec:.1f}x)")
            if not whole:
                print(f"  exact top 10 (numpy): sqlite-vec {exact[False]}/{args.runs}, "
                      f"in-memory copy {exact[True]}/{args.runs} (binary codes above 60,000 vectors; "
                      f"random vectors are their worst case)")
        if args.cli:
            cli_runs(db_path, work, args.cli, args.baseline)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
