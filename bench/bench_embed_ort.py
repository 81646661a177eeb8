"""Embedding throughput: coderag's embedding path against bare onnxruntime on the same windows.

    .venv/bin/python -m bench.bench_embed_ort --db INDEX [--chunks 192] [--rounds 2] [--threads 2]

A seeded sample of the index's chunks, as the embedder reads them (header and text,
`store.embeddings.chunk_parts`), embedded two ways, rounds alternated in one process:

- ours: `EmbeddingModel.embed(texts, heads)`, what `coderag embed` runs (fastembed under it; a
  chunk longer than the model's window split into windows, each with the header, and pooled);
- bare: the very window texts ours embeds (`Windows.split`), tokenised by the model's own
  tokenizer, run through one `onnxruntime.InferenceSession` on the same `model.onnx` with the
  same thread count, mean-pooled, normalised and pooled per chunk as ours does; no fastembed.

Prints chunks per CPU second of this process (every thread, onnxruntime's included) and per
wall second for each, the ratio, and the largest cosine distance between the two vectors of a
chunk (the same computation: ~0).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import machine_line
from coderag_tui.config import EmbedSettings
from coderag_tui.indexing.embedder import bundled_model_dir, load_model
from coderag_tui.indexing.windows import pool
from coderag_tui.store.db import open_database
from coderag_tui.store.embeddings import chunk_parts, pending_chunks


class BareOrt:
    """The model file through onnxruntime alone: tokenise, run, mean-pool, normalise."""

    def __init__(self, folder: Path, tokenizer: Any, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = tokenizer
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: Sequence[str], batch: int) -> np.ndarray:
        out = []
        for start in range(0, len(texts), batch):
            encoded = self.tokenizer.encode_batch(list(texts[start : start + batch]))
            ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out.append(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12))
        return np.concatenate(out).astype(np.float32)


def bare_chunks(bare: BareOrt, model: Any, heads: Sequence[str], texts: Sequence[str], batch: int) -> np.ndarray:
    """Ours' windows, embedded bare and pooled per chunk as ours pools them."""
    pieces: list[str] = []
    spans: list[tuple[int, list[int]]] = []
    for h, t in zip(heads, texts, strict=True):
        split = model._windows.split(h, t) if model._windows is not None else [(h + t, 1)]
        spans.append((len(pieces), [w for _, w in split]))
        pieces.extend(p for p, _ in split)
    vecs = bare.embed(pieces, batch)
    return np.stack([vecs[i] if len(w) == 1 else pool(vecs[i : i + len(w)], w) for i, w in spans])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True, help="an index (its chunks are read, nothing is written)")
    p.add_argument("--chunks", type=int, default=192)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    print(machine_line())
    settings = EmbedSettings(threads=args.threads)
    model = load_model(settings)
    db = open_database(Path(args.db), readonly=True)
    ids = sorted(cid for cid, _ in pending_chunks(db)[0])
    ids = sorted(random.Random(7).sample(ids, min(args.chunks, len(ids))))
    parts = chunk_parts(db, ids)
    db.close()
    heads = [parts[i][0] for i in ids if i in parts]
    texts = [parts[i][1] for i in ids if i in parts]
    bare = BareOrt(bundled_model_dir(settings.max_length), model.raw.model.tokenizer, args.threads)
    windows = sum(len(model._windows.split(h, t)) if model._windows is not None else 1
                  for h, t in zip(heads, texts, strict=True))
    model.embed(texts[:8], heads[:8])  # warm both
    bare_chunks(bare, model, heads[:8], texts[:8], model.batch_size)
    rates: dict[str, list[tuple[float, float]]] = {"ours": [], "bare": []}
    gap = 0.0
    for _ in range(args.rounds):
        for name in ("ours", "bare"):
            cpu, wall = time.process_time(), time.perf_counter()
            vecs = (model.embed(texts, heads) if name == "ours"
                    else bare_chunks(bare, model, heads, texts, model.batch_size))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            rates[name].append((len(texts) / cpu, len(texts) / wall))
            if name == "ours":
                ours = vecs
            else:
                gap = max(gap, float(np.max(1.0 - np.sum(ours * vecs, axis=1))))
    print(f"{len(texts)} chunks ({windows} windows) of {args.db}, batch {model.batch_size}, "
          f"{args.threads} threads, {args.rounds} rounds alternated")
    for name, values in rates.items():
        print(f"  {name:<5} {statistics.median(v[0] for v in values):6.1f} chunks per CPU s   "
              f"{statistics.median(v[1] for v in values):6.1f} per wall s")
    ratio = statistics.median(v[0] for v in rates["ours"]) / statistics.median(v[0] for v in rates["bare"])
    print(f"  ours / bare (CPU): {ratio:.2f}; largest cosine distance between the two vectors of a chunk: {gap:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
