"""The learned ranker's output on pasted reports, written down to compare two code versions: a
change meant to make the ranker cheaper must leave every list identical (the same files and units
in the same order, with the same model scores).

    .venv/bin/python -m bench.ranker_lists --root TREE --db INDEX --jsonl SET.jsonl [--jsonl ...] --out A.json
    .venv/bin/python -m bench.ranker_lists --compare A.json B.json

Per report: `search_files` (path, score) and `search` (path, qualname, chunk lines, score), each in
order, as `coderag search` on the report gives them. Scores are written with `repr`, so equal means
bit for bit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.retrieval import ranker
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag


def lists(args: argparse.Namespace) -> int:
    queries = [json.loads(line)["query"] for path in args.jsonl for line in Path(path).read_text().splitlines()
               if line.strip()]
    queries = [q for q in queries if ranker.applies(q)][: args.limit or None]
    service = CodeRag(Path(args.root), Settings(), Path(args.db))
    search = dataclasses.replace(service.settings.search, ranker="learned", ranker_model=args.model)
    searcher = Searcher(service.db, search, None)
    out = []
    for q in queries:
        files = [(h.unit.path, repr(h.score)) for h in searcher.search_files(q, k=args.k)]
        units = [(h.unit.path, h.unit.qualname, h.chunk_start, h.chunk_end, repr(h.score))
                 for h in searcher.search(q, k=args.k).hits]
        out.append({"query": q[:80], "files": files, "units": units})
    service.close()
    Path(args.out).write_text(json.dumps(out, indent=0))
    print(f"{len(out)} reports written to {args.out}")
    return 0


def compare(a: str, b: str) -> int:
    old, new = json.loads(Path(a).read_text()), json.loads(Path(b).read_text())
    if len(old) != len(new):
        print(f"different report counts: {len(old)} and {len(new)}")
        return 1
    differ = [i for i, (x, y) in enumerate(zip(old, new, strict=True)) if x != y]
    for i in differ[:10]:
        print(f"differs: report {i} ({old[i]['query']!r})")
    files = sum(len(x["files"]) for x in old)
    units = sum(len(x["units"]) for x in old)
    print(f"{len(old)} reports, {files} file hits, {units} unit hits: "
          f"{'identical' if not differ else f'{len(differ)} reports differ'}")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root")
    p.add_argument("--db")
    p.add_argument("--jsonl", action="append", default=[])
    p.add_argument("--out")
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--limit", type=int, default=0, help="the first N reports only")
    p.add_argument("--model", default="", help="a model file (default: the shipped one)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not (args.root and args.db and args.jsonl and args.out):
        p.error("--root, --db, --jsonl and --out are needed (or --compare A B)")
    return lists(args)


if __name__ == "__main__":
    raise SystemExit(main())
