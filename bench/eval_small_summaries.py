"""The small CI eval (bench/harness/eval_small.py: requests 2.32.3 with its docstrings removed,
each query a docstring's first line) on copies of one index without descriptions, with profiles
only, with the model's summaries shown and with them ranked too (bench/harness/variants.py), in
one run:

    python -m bench.eval_small_summaries --work DIR [--summarize]

DIR keeps the corpus and its index between runs; `--summarize` first makes the summaries the
default budget allows with the configured model (slow: ~10 s a summary on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.harness import machine_line
from bench.harness.eval_small import build_corpus, cases_for
from bench.harness.variants import (
    VARIANTS,
    checkpoint,
    make_variant,
    model_summarizer,
    settings_for,
)
from coderag_tui.config import Settings
from coderag_tui.retrieval.evaluate import KS, accuracy, evaluate_case
from coderag_tui.retrieval.search import MODES
from coderag_tui.service import CodeRag


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--summarize", action="store_true")
    args = ap.parse_args()
    print(machine_line())
    repo, triples = build_corpus(args.work)
    db_path = args.work / "index.db"
    service = CodeRag(repo, Settings(), db_path)
    service.index()
    if args.summarize:
        t0 = time.perf_counter()
        summarizer = model_summarizer(service)  # the bundled model: the service would refuse it
        print(summarizer.run(summarizer.plan(None)).text(), f"({time.perf_counter() - t0:.0f} s)", flush=True)
    kinds = dict(service.db.rows("SELECT kind, count(*) FROM unit_summaries GROUP BY kind"))
    print(f"summaries: {kinds or 'none'} over {service.db.scalar('SELECT count(*) FROM units')} units")
    service.embed()
    service.close()
    checkpoint(db_path)
    for variant in VARIANTS:
        service = CodeRag(repo, settings_for(variant), make_variant(db_path, variant))
        service.index()
        done = service.embed()
        cases = cases_for(service, triples)
        searcher = service.searcher()
        results = [evaluate_case(searcher, c, MODES) for c in cases]
        cells = "  ".join(f"{mode} " + " / ".join(f"{accuracy(results, level, mode, k):.1f}"
                                                     for level in ("file", "func") for k in KS[:2])
                          for mode in MODES)
        print(f"{variant:9s} n={len(cases)} (re-embedded {done.embedded})  file@1 / file@5 / func@1 / func@5:  "
              f"{cells}", flush=True)
        service.close()


if __name__ == "__main__":
    main()
