"""Gold hunks for a SWE-bench set that lacks them (the training set carries gold files and
function names only): `{instance_id: [{file, old_start, old_lines}, ...]}` from the gold patches,
for the gold files only, as the dev sets' `gold_hunks` are (each `@@ -a,b` header of a gold file).

    .venv/bin/python -m bench.swebench_hunks --jsonl ../shared/eval/swebench-train.jsonl \
        --records VERIFIED.json --out bench/data/swebench-train-hunks.json

`--records`: SWE-bench records with `instance_id` and `patch` (or `golden_patch`), a JSON list;
the training set's README names the file they come from. On the dev set this gives exactly its
`gold_hunks` (checked: 47 of 47). `bench/eval_retrieval.py --hunks FILE` reads the result. `--functions` writes `{instance_id:
["path::name", ...]}` instead, made as the training set's `gold_functions` (for a set without them:
the unit labels of bench/train_ranker.py on release checkouts, where hunks' lines do not apply).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@ ?(.*)$")
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def hunks(patch: str, gold: set[str]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    current = None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = path[2:] if path.startswith("b/") else None
            continue
        m = _HUNK.match(line)
        if m and current in gold:
            out.append({"file": current, "old_start": int(m.group(1)),
                        "old_lines": int(m.group(2) if m.group(2) is not None else 1)})
    return out


def functions(patch: str, gold: set[str]) -> list[str]:
    """`path::name` of the functions and classes a patch changes in its gold .py files, as the
    training set's `gold_functions` are made: the def or class of each hunk's `@@` header,
    replaced by any def or class line met inside the hunk (context or removed) before a change."""
    out: dict[str, None] = {}
    current = None
    name = ""
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = path[2:] if path.startswith("b/") and path.endswith(".py") and path[2:] in gold else None
            continue
        if line.startswith("--- ") or current is None:
            continue
        m = _HUNK.match(line)
        if m:
            d = _DEF.match(m.group(3) or "")
            name = d.group(1) if d else ""
            continue
        if line[:1] in (" ", "-"):
            d = _DEF.match(line[1:])
            if d:
                name = d.group(1)
        if line[:1] in ("+", "-") and name:
            out.setdefault(f"{current}::{name}", None)
    return list(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jsonl", required=True)
    p.add_argument("--records", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--functions", action="store_true", help="write gold functions (`path::name`) instead of hunks")
    args = p.parse_args()
    records = {r["instance_id"]: r.get("patch") or r.get("golden_patch") or ""
               for r in json.loads(Path(args.records).read_text())}
    out = {}
    for line in Path(args.jsonl).read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            patch = records.get(case["instance_id"], "")
            found = (functions if args.functions else hunks)(patch, set(case["gold_files"]))
            if found:
                out[case["instance_id"]] = found
    rows = [f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(out.items())]
    Path(args.out).write_text("{\n" + ",\n".join(rows) + "\n}\n")  # one case a line
    print(f"{len(out)} cases with gold {'functions' if args.functions else 'hunks'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
