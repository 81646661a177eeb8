"""How often a model's summaries name code the repository does not have.

    .venv/bin/python -m bench.bench_summary_names REPO [--n 40] [--model PATH] [--work DIR]

Indexes REPO (structure only) into WORK, makes the first N summaries of the default budget's
plan (files and classes first) with the model (default: the bundled tiny one, which coderag
itself no longer lets write summaries), checks each with `answering/names.unknown_names` (the
check `ask` runs on answers) and prints the summaries that name something the index does not
have, how many, and the CPU time the summaries took.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from bench.harness.variants import model_summarizer
from coderag_tui.answering.names import unknown_names
from coderag_tui.config import load_settings
from coderag_tui.service import CodeRag
from coderag_tui.store import descriptions as store
from coderag_tui.store.known import StoreNames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--n", type=int, default=40, help="summaries to make")
    ap.add_argument("--model", help="a GGUF path (default: the configured model, the bundled tiny one)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-summary-names"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base = load_settings(None, None)
    service = CodeRag(args.repo, replace(base, embed=replace(base.embed, enabled=False)),
                      args.work / f"{args.repo.name}.db")
    service.index()
    summarizer = model_summarizer(service, args.model)
    targets = summarizer.plan(None)[: args.n]
    cpu = time.process_time()
    for target in targets:
        summarizer.summarize(target)
    cpu = time.process_time() - cpu
    made = {s.key: s for s in store.all_summaries(service.db)}
    reads = StoreNames(service.db)
    checked = [(t, made[t.key]) for t in targets if t.key in made]
    naming = 0
    for target, summary in checked:
        unknown = unknown_names(summary.text, reads)
        if unknown:
            naming += 1
            print(f"{target.label}: {', '.join(unknown)}")
    kinds = sorted({t.kind for t, _ in checked})
    print(f"\n{summarizer.model}: {naming}/{len(checked)} summaries ({', '.join(kinds)}) name code the index "
          f"does not have; {cpu:.0f} CPU s for {len(checked)} ({cpu / max(len(checked), 1):.1f} s each)")
    service.close()


if __name__ == "__main__":
    main()
