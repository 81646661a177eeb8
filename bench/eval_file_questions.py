"""SWE-QA questions that ask for files (retrieval/intent.py): context evidence recall with and
without the file-level pieces (retrieval/file_context.py), in one run on the same index.

    python -m bench.eval_file_questions --set flask=CHECKOUT ... [--work DIR]

Only these questions' contexts differ between the two, so a set's recall changes by the sum of
their differences over the set's question count (printed as "set delta").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.harness import machine_line
from bench.harness.evidence import recall
from coderag_tui.retrieval import compose
from coderag_tui.retrieval.intent import is_file_question
from coderag_tui.service import CodeRag


def run_set(name: str, repo: Path, eval_dir: Path, work: Path, max_tokens: int) -> tuple[float, int]:
    cases = [json.loads(line) for line in (eval_dir / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    cases = [c for c in cases if c.get("evidence")]
    asks = [c for c in cases if is_file_question(c["question"])]
    service = CodeRag.open(repo, db_path=work / f"{name}.db")
    service.index()
    delta = 0.0
    for case in asks:
        evidence = list(dict.fromkeys(case["evidence"]))
        after = recall(evidence, service.context(case["question"], max_tokens=max_tokens).render())
        compose.is_file_question = lambda _q: False  # the same context without the file pieces
        try:
            before = recall(evidence, service.context(case["question"], max_tokens=max_tokens).render())
        finally:
            compose.is_file_question = is_file_question
        delta += after - before
        print(f"  {before:.2f} -> {after:.2f} {case['question'][:100]!r}")
    service.close()
    print(f"{name:12s} file questions {len(asks)} of {len(cases)}; set delta {delta / max(len(cases), 1):+.4f}",
          flush=True)
    return delta, len(cases)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, help="NAME=CHECKOUT")
    ap.add_argument("--eval-dir", type=Path, default=Path("/work/shared/eval/sweqa"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/sweqa-eval"))
    ap.add_argument("--max-tokens", type=int, default=4000)
    args = ap.parse_args()
    print(machine_line())
    total, n = 0.0, 0
    for spec in args.set:
        name, _, path = spec.partition("=")
        d, count = run_set(name, Path(path), args.eval_dir, args.work, args.max_tokens)
        total += d
        n += count
    print(f"{'overall':12s} delta {total / max(n, 1):+.4f} (n={n})")


if __name__ == "__main__":
    main()
