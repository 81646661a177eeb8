"""Gold hunks for a SWE-bench set that lacks them (the training set carries gold files and
function names only): `{instance_id: [{file, old_start, old_lines}, ...]}` from the gold patches,
for the gold files only, as the dev sets' `gold_hunks` are (each `@@ -a,b` header of a gold file).

    .venv/bin/python bench/swebench_hunks.py --jsonl ../shared/eval/swebench-train.jsonl \
        --records VERIFIED.json --out bench/data/swebench-train-hunks.json

`--records`: SWE-bench records with `instance_id` and `patch` (or `golden_patch`), a JSON list;
the training set's README names the file they come from. On the dev set this gives exactly its
`gold_hunks` (checked: 47 of 47). `bench/eval_retrieval.py --hunks FILE` reads the result.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+")


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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jsonl", required=True)
    p.add_argument("--records", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    records = {r["instance_id"]: r.get("patch") or r.get("golden_patch") or ""
               for r in json.loads(Path(args.records).read_text())}
    out = {}
    for line in Path(args.jsonl).read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            found = hunks(records.get(case["instance_id"], ""), set(case["gold_files"]))
            if found:
                out[case["instance_id"]] = found
    rows = [f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(out.items())]
    Path(args.out).write_text("{\n" + ",\n".join(rows) + "\n}\n")  # one case a line
    print(f"{len(out)} cases with gold hunks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
