"""Pasted-snippet self-retrieval: a chunk's code pasted as the query, is its unit found?

    python -m bench.eval_snippets --root CHECKOUT --db INDEX [--n 100] [--variants current,whole]

The index must hold vectors (`coderag embed`; their model id is not checked). 100 chunks of 200-600
characters (seeded) whose code the router takes for a snippet are searched twice: verbatim and
edited (first and last lines dropped, about one word in five reversed, as a user's copy of
similar code differs). A hit is the chunk's own unit, its parent or a unit inside the chunk
(where a match moves, see retrieval/refine.py). Prints top-1 / top-10 hits per variant, hybrid
and BM25 only, and the CPU time per search, all in one run:

- `current`: the code as it is (BM25 reads a snippet's rarest words up to
  `search.SNIPPET_POSTINGS` postings);
- `whole`: BM25 with the full postings budget (`lexical.MAX_POSTINGS`), as before that cut.

Prints figures; writes nothing into the repository.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from pathlib import Path

from bench.harness import machine_line, p50_p95
from coderag_tui.config import Settings
from coderag_tui.retrieval import lexical, router, search
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag

_WORD = re.compile(r"[A-Za-z_]\w{2,}")
VARIANTS = {"current": search.SNIPPET_POSTINGS, "whole": lexical.MAX_POSTINGS}


def edit(text: str, rng: random.Random) -> str:
    """The snippet as a user's similar code: first and last lines dropped, some words reversed."""
    lines = text.splitlines()
    body = "\n".join(lines[1:-1] if len(lines) > 3 else lines)
    return _WORD.sub(lambda m: m.group(0)[::-1] if rng.random() < 0.2 else m.group(0), body)


def pick(service: CodeRag, n: int, seed: int) -> list[tuple[str, set[int]]]:
    """(snippet, the units that count as a hit) for n seeded chunks routed as snippets."""
    db = service.db
    rows = db.execute("SELECT c.id, c.unit_id, c.file_id, c.start_line, c.end_line, c.text FROM chunks c "
                      "WHERE length(c.text) BETWEEN 200 AND 600 ORDER BY c.id")
    rows = [r for r in rows if router.classify(str(r[5])).kind == router.SIMILARITY]
    out = []
    for _cid, uid, fid, start, end, text in random.Random(seed).sample(rows, min(n, len(rows))):
        ok = {int(uid or 0)}
        parent = db.scalar("SELECT parent_id FROM units WHERE id = ?", (uid,))
        if parent:
            ok.add(int(parent))
        ok.update(int(r[0]) for r in db.execute(
            "SELECT id FROM units WHERE file_id = ? AND start_line >= ? AND end_line <= ?", (fid, start, end)))
        out.append((str(text), ok))
    return out


def run(searcher: Searcher, cases: list[tuple[str, set[int]]], mode: str) -> tuple[int, int, list[float], int]:
    top1 = top10 = routed = 0
    cpu: list[float] = []
    for text, ok in cases:
        routed += router.classify(text).kind == router.SIMILARITY
        c = time.process_time()
        hits = searcher.search(text, k=10, mode=mode).hits
        cpu.append(time.process_time() - c)
        ids = [h.unit.id for h in hits]
        top1 += bool(ids) and ids[0] in ok
        top10 += any(i in ok for i in ids[:10])
    return top1, top10, cpu, routed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True, help="the checkout the index was built from")
    p.add_argument("--db", required=True, help="its index, with vectors")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--variants", default="current,whole")
    args = p.parse_args()
    print(machine_line())
    service = CodeRag(Path(args.root), Settings(), Path(args.db))
    query_model = service._retrieval().query_model(service.settings.embed)
    matrix = VectorMatrix()
    searcher = Searcher(service.db, service.settings.search, query_model.query, matrix)
    verbatim = pick(service, args.n, args.seed)
    rng = random.Random(args.seed)
    edited = [(edit(t, rng), ok) for t, ok in verbatim]
    print(f"{args.root}: {len(verbatim)} snippets, {service.status().chunks} chunks, "
          f"{len(matrix.ids) if matrix.refresh(service.db) else 0} vectors in memory")
    searcher.search(verbatim[0][0])  # load the model
    results: dict[str, list[float]] = {}
    for rnd in range(2):  # the variants alternate, so they share the machine's noise
        for name in args.variants.split(","):
            search.SNIPPET_POSTINGS = VARIANTS[name]
            for label, cases in (("verbatim", verbatim), ("edited", edited)):
                for mode in ("hybrid", "bm25"):
                    t1, t10, cpu, routed = run(searcher, cases, mode)
                    results.setdefault(f"{name} {label} {mode}", []).extend(cpu)
                    if rnd == 0:
                        print(f"{name:8s} {label:8s} {mode:6s} top1 {t1:3d}  top10 {t10:3d}  of {len(cases)} "
                              f"({routed} routed as snippets)")
    for key, cpu in results.items():
        print(f"CPU {key:26s} {p50_p95(cpu, width=6)}")
    search.SNIPPET_POSTINGS = VARIANTS["current"]
    service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
