"""Recall and speed of the in-memory KNN's binary-coded form against exact float32 KNN, on real
vectors.

    python -m bench.bench_knn --cache /tmp/swe-eval/vector_cache.sqlite [--copies 4]

The vectors come from the cache that bench/eval_retrieval.py fills (real MiniLM embeddings of the
chunks of every SWE-bench checkout, stdlib sqlite3). Queries: short questions embedded by the
real model, and stored vectors with a little noise (a pasted snippet). `--copies N` also times
KNN over N noisy copies of the vectors (a larger index; recall is not measured there).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time

import numpy as np

from bench.harness import machine_line, p50_p95
from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import load_model
from coderag_tui.retrieval import matrix as matrix_module
from coderag_tui.retrieval.matrix import VectorMatrix

QUESTIONS = [
    "parse the header of a FITS file", "compute the separability matrix of a compound model",
    "raise an error when a fixture is not found", "convert a unit to another unit with equivalencies",
    "how are warnings filtered", "check whether a name is a valid python identifier",
    "render a plot legend for categorical hue", "send a request with a session and retry on failure",
    "load the configuration from environment variables", "merge two datasets along a dimension",
    "where are command line options registered", "decode the response body with the right encoding",
    "rewrite assert statements to show intermediate values", "format a report of failed tests",
    "read a table from an ascii file", "compute the rolling mean of an array", "the url of a redirect",
    "serialize the model to json", "collect test modules from a directory", "find unused imports",
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", required=True)
    p.add_argument("--copies", type=int, default=4)
    p.add_argument("--noisy-queries", type=int, default=100)
    args = p.parse_args()
    print(machine_line())
    conn = sqlite3.connect(f"file:{args.cache}?mode=ro", uri=True)
    vecs = np.stack([np.frombuffer(b, dtype=np.float32) for (b,) in conn.execute("SELECT vec FROM cache")])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    n, dim = vecs.shape
    model = load_model(Settings().embed)
    rng = np.random.default_rng(7)
    noisy = vecs[rng.choice(n, args.noisy_queries, replace=False)] + rng.normal(0, 0.02, (args.noisy_queries, dim))
    queries = {"questions": [model.query(q) for q in QUESTIONS],
               "snippets": [(v / np.linalg.norm(v)).astype(np.float32) for v in noisy]}
    coded = VectorMatrix()
    coded.refresh = lambda db: True  # type: ignore[method-assign]  # rows loaded directly below
    saved = matrix_module.EXACT_MAX
    matrix_module.EXACT_MAX = 0
    coded._load(np.arange(1, n + 1), vecs)
    matrix_module.EXACT_MAX = saved
    print(f"{n} real vectors x {dim}; coded copy {(coded.mat.nbytes + coded.codes.nbytes) / 2**20:.1f} MiB "
          f"vs float32 {vecs.nbytes / 2**20:.1f} MiB")
    for label, qs in queries.items():
        for k in (10, 180):
            rec = []
            for q in qs:
                want = set(np.argpartition(-(vecs @ q), k - 1)[:k] + 1)
                got = {i for i, _ in coded.knn(None, q, k) or []}  # type: ignore[arg-type]
                rec.append(len(want & got) / k)
            print(f"recall@{k:<3} {label:<9} mean {statistics.mean(rec):.3f}  min {min(rec):.3f}  (n={len(qs)})")
    if args.copies > 1:
        big = np.concatenate([vecs] + [vecs + rng.normal(0, 0.02, vecs.shape).astype(np.float32)
                                       for _ in range(args.copies - 1)])
        big /= np.linalg.norm(big, axis=1, keepdims=True)
        coded._load(np.arange(1, len(big) + 1), big)
        times_c, times_e = [], []
        for q in queries["questions"] * 5:
            t = time.perf_counter()
            coded.knn(None, q, 180)  # type: ignore[arg-type]
            times_c.append(time.perf_counter() - t)
            t = time.perf_counter()
            np.argpartition(-np.einsum("ij,j->i", big, q), 179)[:180]
            times_e.append(time.perf_counter() - t)
        print(f"KNN top-180 over {len(big)} vectors: coded {p50_p95(times_c)}; "
              f"exact float32 {p50_p95(times_e)} (same run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
