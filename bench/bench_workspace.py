"""A workspace of two real repositories: Flask 3.0.3 and Flask-Login 0.6.3 (which imports
flask), from PyPI's sdists. What the cross-repository links find, and what they and a
context across both cost against one repository, in CPU time measured in one run.

    python -m bench.bench_workspace [--runs 5] [--flask DIR] [--flask-login DIR]

Prints: the imports of flask that resolve into the Flask repository, the calls linked through
them, and for `callers` of a few Flask functions and for `context` the CPU seconds (median of
--runs, alternating) of the workspace against the repository alone (no links, no merging).
Embedding is off (keywords, symbols and the graph), so no model load is timed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.harness import machine_line, require_sdist, timed
from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.service import CodeRag
from coderag_tui.workspace import Workspace
from coderag_tui.workspace.links import Links

NAMES = ("abort", "url_for", "redirect", "has_request_context")
QUESTION = "how does the login manager redirect an unauthorized user to the login view?"


def cpu_of(fn: Callable[[], object]) -> float:
    return timed(fn).cpu_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--flask", type=Path, default=None, help="an unpacked Flask 3.0.3 sdist (default: from PyPI)")
    ap.add_argument("--flask-login", type=Path, default=None,
                    help="an unpacked Flask-Login 0.6.3 sdist (default: from PyPI)")
    args = ap.parse_args()
    print(machine_line())
    flask = args.flask or require_sdist("flask", "3.0.3")
    login = args.flask_login or require_sdist("flask-login", "0.6.3")
    settings = Settings(embed=EmbedSettings(enabled=False))
    with tempfile.TemporaryDirectory() as tmp:
        services = [CodeRag(Path(flask), settings, Path(tmp) / "flask.db"),
                    CodeRag(Path(login), settings, Path(tmp) / "login.db")]
        for s in services:
            s.vectors_in_memory = False
            print(f"indexed {s.root.name}: {s.index().files_indexed} files")
        ws = Workspace(services)
        names = list(ws.services)
        links = Links(ws.chosen())
        imports = links.imports()
        print(f"repositories: {names}; packages: "
              + "; ".join(f"{n}: {[p.name for p in pk]}" for n, pk in links.packages.items()))
        print(f"imports resolved into another repository: {len(imports)} "
              f"(modules: {sorted({i.module for i in imports})})")
        linked = ws.structural("called_by", NAMES[0])
        for name in NAMES:
            across = [e for e in ws.structural("called_by", name) if e.unit and e.unit.repo == names[1]]
            print(f"callers of {name} in {names[1]}: {len(across)}"
                  + (f" (first: {across[0].unit.path}:{across[0].line} {across[0].unit.qualname})"
                     if across and across[0].unit else ""))
        alone, both = [], []
        for _ in range(args.runs):
            alone.append(cpu_of(lambda: [services[0].callers(n) for n in NAMES]))
            both.append(cpu_of(lambda: [ws.structural("called_by", n) for n in NAMES]))
        a, b = statistics.median(alone), statistics.median(both)
        print(f"callers x{len(NAMES)}: flask alone {a * 1000:.1f} ms CPU, workspace {b * 1000:.1f} ms CPU: x{b / a:.2f}")
        alone, both = [], []
        for _ in range(args.runs):
            alone.append(cpu_of(lambda: services[1].context(QUESTION, max_tokens=4000)))
            both.append(cpu_of(lambda: ws.context(QUESTION, 4000, repos=["*"])))
        a, b = statistics.median(alone), statistics.median(both)
        _, ctx = ws.context(QUESTION, 4000, repos=["*"])
        share = {n: sum(p.tokens for p in ctx.pieces if p.path.startswith(n + ":")) for n in names}
        print(f"context: {names[1]} alone {a * 1000:.0f} ms CPU, across both {b * 1000:.0f} ms CPU: x{b / a:.2f}; "
              f"tokens by repository {share} of {ctx.budget}")
        del linked
        ws.close()


if __name__ == "__main__":
    main()
