"""Retrieval benchmarks: embedding throughput, hybrid search latency, context composition time.

    python -m bench.bench_retrieval [--data /work/data] [--work /tmp/coderag-bench]

1. Embedding: chunks/s of our embed path (`embed_index`: read texts from the index, batch,
   embed, write vectors in small transactions) against the bare model's `embed()` on the same
   texts in the same run, alternating the two to share the machine's noise.
2. Search latency over a large index built from real code (DATA/big and DATA/django-5.1; the
   index lives in WORK and is reused): p50/p95 per route, first with keywords, symbols and the
   graph only, then hybrid with vectors (KNN by sqlite-vec's scan, then by the in-memory copy),
   after filling the vector table (see --vectors for what those vectors are).
3. Context composition time (search + expansion + packing) at the default budget.

Prints figures; writes nothing into the repository.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import coderag_tui
from bench.harness import machine_line, p50_p95, timed
from bench.harness.trees import rerun_with_tree, without_option
from coderag_tui.config import IndexSettings, Settings
from coderag_tui.indexing.embedder import EmbeddingModel, embed_index, load_model
from coderag_tui.models import Progress
from coderag_tui.retrieval import router
from coderag_tui.retrieval.compose import compose
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.search import Searcher
from coderag_tui.service import CodeRag
from coderag_tui.store.db import Database
from coderag_tui.store.embeddings import VEC_TABLE


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


# --------------------------------------------------------------------------- 1. embedding


def clear_vectors(db: Database) -> None:
    with db.transaction():
        db.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
        db.execute("DELETE FROM vectors")
        db.set_meta("embed_model", "")


def bench_embedding(corpus: Path, work: Path, model: EmbeddingModel, chunks: int, rounds: int) -> None:
    service = CodeRag(corpus, Settings(), work / "embed-bench.db")
    service.index()
    db = service.db
    ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id")]
    keep = set(random.Random(7).sample(ids, min(chunks, len(ids))))
    with db.transaction():  # the bench index keeps only the sample, so both paths embed the same texts
        db.execute(f"DELETE FROM chunks WHERE id NOT IN ({','.join(map(str, sorted(keep)))})")
    texts = [h + t for h, t in db.execute("SELECT header, text FROM chunks ORDER BY id")]
    n_hashes = int(db.scalar("SELECT count(DISTINCT hash) FROM chunks"))
    tokens = model.raw.model.tokenizer.encode_batch(texts) if hasattr(model.raw, "model") else None
    if tokens is not None:
        lens = [sum(e.attention_mask) for e in tokens]  # the batch is padded: count real tokens
        log(f"embedding sample: {len(texts)} chunks ({n_hashes} distinct), tokens per chunk (capped at 256): "
            f"mean {statistics.mean(lens):.0f}, median {statistics.median(lens):.0f}")
    list(model.raw.embed(texts[:32], batch_size=model.batch_size))  # warm up
    bare, ours, bare_sorted = [], [], []
    by_len = sorted(texts, key=len)
    for r in range(rounds):
        t = time.perf_counter()
        list(model.raw.embed(texts, batch_size=model.batch_size))
        bare.append(len(texts) / (time.perf_counter() - t))
        clear_vectors(db)
        t = time.perf_counter()
        summary = embed_index(db, model)
        ours.append(summary.embedded / (time.perf_counter() - t))
        t = time.perf_counter()
        list(model.raw.embed(by_len, batch_size=model.batch_size))
        bare_sorted.append(len(texts) / (time.perf_counter() - t))
        log(f"round {r + 1}: bare {bare[-1]:.1f}/s, ours {ours[-1]:.1f}/s (embedded {summary.embedded}), "
            f"bare on length-sorted texts {bare_sorted[-1]:.1f}/s")
    b, o, s = statistics.median(bare), statistics.median(ours), statistics.median(bare_sorted)
    print(f"EMBED  bare model.embed(): {b:.1f} chunks/s | our embed path: {o:.1f} chunks/s "
          f"({100 * o / b:.0f}% of bare) | bare on length-sorted texts: {s:.1f} chunks/s "
          f"({100 * o / s:.0f}%)  [median of {rounds} rounds, {len(texts)} chunks, batch {model.batch_size}, "
          f"threads {model.raw.model.threads if hasattr(model.raw, 'model') else '?'}]")
    service.close()


# --------------------------------------------------------------------------- 2. the big index


def build_big(data: Path, work: Path, dirs: list[str]) -> CodeRag:
    include = tuple(f"/{d}/" for d in dirs)
    settings = dataclasses.replace(Settings(), index=IndexSettings(include=include))
    service = CodeRag(data, settings, work / "big.db")
    last = [0.0]

    def progress(p: Progress) -> None:
        if p.phase == "parse" and time.time() - last[0] > 30:
            last[0] = time.time()
            log(f"  parse {p.done}/{p.total} files, {p.chunks} chunks, {p.rate:.0f} files/s")

    t = time.perf_counter()
    summary = service.index(progress=progress)
    st = service.status()
    log(f"big index: {st.files} files, {st.units} units, {st.chunks} chunks, {st.edges} edges "
        f"({summary.files_indexed} files parsed now in {time.perf_counter() - t:.0f}s); {service.db_path}")
    return service


def fill_vectors(service: CodeRag, model: EmbeddingModel, sample: int, noise: float) -> None:
    """Give every chunk hash a vector: real embeddings of `sample` random chunks, each reused for
    many hashes with small Gaussian noise (then normalised). sqlite-vec's KNN is a brute-force scan,
    so its cost depends on the number and size of the vectors, not on their values."""
    db = service.db
    total = int(db.scalar("SELECT count(DISTINCT hash) FROM chunks"))
    have = int(db.scalar("SELECT count(*) FROM vectors")) if db.has_table(VEC_TABLE) else 0
    if db.get_meta("embed_model") == model.id and have >= total:
        log(f"vectors: {have} already in the index")
        return
    db.ensure_model_table(model.id, model.dim)
    rng = np.random.default_rng(11)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks")]
    picked = random.Random(5).sample(ids, min(sample, len(ids)))
    marks = ",".join("?" * len(picked))
    texts = [h + t for h, t in db.execute(f"SELECT header, text FROM chunks WHERE id IN ({marks})", picked)]
    t = time.perf_counter()
    base = model.embed(texts)
    log(f"vectors: embedded {len(texts)} real chunks in {time.perf_counter() - t:.0f}s; "
        f"filling {total} hashes with noisy copies (noise sd {noise})")
    hashes = [r[0] for r in db.execute(
        "SELECT DISTINCT c.hash FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash=c.hash)")]


    for i in range(0, len(hashes), 5000):
        part = hashes[i : i + 5000]
        vecs = base[rng.integers(0, len(base), len(part))] + rng.normal(0, noise, (len(part), model.dim))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        db.write_vectors(part, vecs.astype(np.float32), model.id)
    log(f"vectors: {db.scalar('SELECT count(*) FROM vectors')} in the index")


def queries_for(service: CodeRag, n: int, pasted: int | None = None) -> dict[str, list[str]]:
    db = service.db
    rng = random.Random(3)
    docs = [str(r[0]).strip().splitlines()[0] for r in db.execute(
        "SELECT docstring FROM units WHERE kind<>'file' AND length(docstring) > 30 LIMIT 50000")]
    docs = [d for d in docs if len(d.split()) >= 4]
    names = [str(r[0]) for r in db.execute(
        "SELECT name FROM units WHERE kind IN ('class','function','method') AND length(name) > 5 LIMIT 50000")]
    snippets = [str(r[0]) for r in db.execute("SELECT text FROM chunks WHERE length(text) BETWEEN 200 AND 600 LIMIT 20000")]
    return {
        "semantic": rng.sample(docs, min(n, len(docs))),
        "symbol": rng.sample(names, min(n // 2, len(names))),
        "structural": [f"callers of {x}" for x in rng.sample(names, min(n // 4, len(names)))],
        "similarity": rng.sample(snippets, min(n // 4 if pasted is None else pasted, len(snippets))),
    }


def bench_search(service: CodeRag, searcher: Searcher, queries: dict[str, list[str]], label: str) -> None:
    for q in list(queries["semantic"])[:3]:
        searcher.search(q)  # warm caches (and the model)
    every: list[float] = []
    every_cpu: list[float] = []
    for route, qs in queries.items():
        times, cpus = [], []
        routed: dict[str, list[float]] = {}
        for q in qs:
            run = timed(lambda q=q: searcher.search(q))
            times.append(run.wall_s)
            cpus.append(run.cpu_s)  # every thread: BM25, the query model
            routed.setdefault(router.classify(q).kind, []).append(cpus[-1])
        every.extend(times)
        every_cpu.extend(cpus)
        print(f"SEARCH [{label}] {route:<10} n={len(times):<4} {p50_p95(times, width=7)}  | CPU {p50_p95(cpus, width=7)}")
        if route == "similarity":  # pasted chunks: prose and config among them route as questions
            for kind, cs in sorted(routed.items()):
                print(f"SEARCH [{label}]   pasted, routed {kind:<10} n={len(cs):<4} CPU {p50_p95(cs, width=7)}")
    print(f"SEARCH [{label}] all        n={len(every):<4} {p50_p95(every, width=7)}  | CPU {p50_p95(every_cpu, width=7)}")


def bench_context(service: CodeRag, searcher: Searcher, queries: list[str]) -> None:
    times = []
    tokens = []
    for q in queries:
        run = timed(lambda q=q: compose(searcher, q, service.settings.context, None, service.root,
                                        similar=searcher.similar if searcher.embed_query else None))
        times.append(run.wall_s)
        tokens.append(run.value.tokens)
    print(f"CONTEXT n={len(times)} {p50_p95(times, digits=0)}  "
          f"(budget {service.settings.context.max_tokens}, mean {statistics.mean(tokens):.0f} tokens used)")


def knn_recall(service: CodeRag, matrix: VectorMatrix, qvecs: list[np.ndarray], k: int) -> None:
    """Recall of the in-memory KNN (binary codes + int8 re-scoring) against exact float32 KNN."""
    ids, exact = matrix._rows(service.db, 0)
    found = []
    for q in qvecs:
        want = set(ids[np.argpartition(-(exact @ q), k - 1)[:k]].tolist())
        got = {i for i, _ in matrix.knn(service.db, q, k) or []}
        found.append(len(want & got) / k)
    print(f"KNN recall@{k} of the in-memory copy vs exact: mean {statistics.mean(found):.3f}, "
          f"min {min(found):.3f} over {len(found)} queries")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="/work/data")
    p.add_argument("--work", default="/tmp/coderag-bench")
    p.add_argument("--dirs", default="big,django-5.1", help="folders under --data for the big index")
    p.add_argument("--embed-corpus", default="small/requests", help="folder under --data for the embedding bench")
    p.add_argument("--embed-chunks", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--vectors", type=int, default=512,
                   help="real chunks embedded for the big index; every other chunk gets a noisy copy of one")
    p.add_argument("--noise", type=float, default=0.05)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--pasted", type=int, help="pasted chunks (similarity queries); default queries / 4")
    p.add_argument("--skip", default="", help="comma list of parts to skip: embed, search, context, "
                   "keywords (the pass without vectors), scan (the pass with sqlite-vec's KNN)")
    p.add_argument("--code", help="import coderag_tui from this source tree (a baseline checkout): the same "
                   "bench over the same index, in a child process")
    args = p.parse_args()
    if args.code:
        return rerun_with_tree("bench.bench_retrieval", Path(args.code), without_option(sys.argv[1:], "--code"))
    print(machine_line())
    log(f"code: {Path(coderag_tui.__file__).parent.parent}")  # the tree measured (--code)
    skip = set(args.skip.split(","))
    if {"embed", "search", "context"} <= skip:
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    t = time.perf_counter()
    model = load_model(Settings().embed)
    log(f"model {model.id} loaded in {time.perf_counter() - t:.2f}s (dim {model.dim})")
    if "embed" not in skip:
        bench_embedding(data / args.embed_corpus, work, model, args.embed_chunks, args.rounds)
    if "search" in skip and "context" in skip:
        return 0
    service = build_big(data, work, [d for d in args.dirs.split(",") if d])
    queries = queries_for(service, args.queries, args.pasted)
    kw = Searcher(service.db, service.settings.search, None)
    if "search" not in skip and "keywords" not in skip:
        bench_search(service, kw, queries, "keywords+symbols+graph")
    fill_vectors(service, model, args.vectors, args.noise)

    query_model = service._retrieval().query_model(service.settings.embed)  # the service's query path

    def embed_query(text: str) -> np.ndarray:
        return query_model.query(text)

    st = service.status()
    log(f"hybrid over {st.chunks} chunks, {service.db.scalar('SELECT count(*) FROM vectors')} vectors")
    if "search" not in skip and "scan" not in skip:
        scan = Searcher(service.db, service.settings.search, embed_query)
        bench_search(service, scan, queries, "hybrid, sqlite-vec KNN")
    matrix = VectorMatrix()
    t = time.perf_counter()
    matrix.refresh(service.db)
    log(f"in-memory vectors: {len(matrix.ids)} x {matrix.mat.shape[1]} {matrix.mat.dtype}"
        f"{'' if matrix.exact else ' + binary codes'} ({(matrix.mat.nbytes + matrix.codes.nbytes) / 2**20:.0f} MiB) "
        f"loaded in {time.perf_counter() - t:.1f}s")
    if not matrix.exact:
        knn_recall(service, matrix, [embed_query(q) for q in queries["semantic"][:50]], 180)
    hybrid = Searcher(service.db, service.settings.search, embed_query, matrix)
    if "search" not in skip:
        bench_search(service, hybrid, queries, "hybrid, in-memory KNN")
    if "context" not in skip:
        bench_context(service, hybrid, queries["semantic"][:30])
    service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
