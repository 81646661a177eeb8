"""The bundled embedding model run by onnxruntime and tokenizers directly, for queries.

A one-shot command embeds one query and exits, so what counts is the time to the first
vector. Through fastembed that was ~1.1 s before the first token: importing fastembed alone
pulls in huggingface_hub, httpx, requests and its image stack. Here the same computation
(BERT tokenizer truncated to `max_length`, `last_hidden_state` mean-pooled over the attention
mask, L2-normalised) needs only onnxruntime, tokenizers and numpy.

Loading the int8 ONNX file with onnxruntime's graph optimisations spends ~0.2 s of CPU
folding and fusing the graph on every start. The basic (hardware-independent) optimisations
are therefore applied once and the optimised graph is kept beside the model in the cache
folder (`model.basic-ort<version>.onnx`, ~90 MB: the folded weights are float32); later
starts load it with optimisations off (~0.12 s of CPU). The file is written atomically; a
broken one is rebuilt.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _optimised_path(folder: Path, version: str) -> Path:
    return folder / f"model.basic-ort{version}.onnx"


def _options(ort: Any, threads: int, level: Any) -> Any:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.log_severity_level = 3  # its warnings are not the user's business
    return so


def open_session(folder: Path, threads: int) -> Any:
    """An onnxruntime session of `folder/model.onnx`, from the cached optimised graph when
    there is one (else optimise now and try to cache the result)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    source = folder / "model.onnx"
    cached = _optimised_path(folder, ort.__version__)
    levels = ort.GraphOptimizationLevel
    if cached.is_file() and cached.stat().st_mtime >= source.stat().st_mtime:
        try:
            return ort.InferenceSession(str(cached), _options(ort, threads, levels.ORT_DISABLE_ALL),
                                        providers=providers)
        except Exception:  # a truncated or foreign file: rebuild it below
            cached.unlink(missing_ok=True)
    so = _options(ort, threads, levels.ORT_ENABLE_BASIC)
    tmp = cached.with_name(f".{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    so.optimized_model_filepath = str(tmp)
    try:
        session = ort.InferenceSession(str(source), so, providers=providers)
        if tmp.is_file():
            os.replace(tmp, cached)
    except OSError:  # a read-only cache: run without keeping the optimised graph
        session = ort.InferenceSession(str(source), _options(ort, threads, levels.ORT_ENABLE_BASIC),
                                       providers=providers)
    finally:
        tmp.unlink(missing_ok=True)
    return session


def open_tokenizer(folder: Path, max_length: int) -> Any:
    """The folder's tokenizer, truncating at `max_length` and padding a batch to its longest
    text (as fastembed sets it up for this model)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_length)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    pad_token = str(config.get("pad_token") or "[PAD]")
    pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token=pad_token)
    return tokenizer


class OnnxEmbedder:
    """Mean-pooled, normalised sentence embeddings; `embed` and `query_embed` behave like
    fastembed's (generators of float32 vectors), so `EmbeddingModel` can wrap either."""

    def __init__(self, folder: Path, max_length: int, threads: int) -> None:
        self.session = open_session(folder, threads)
        self.tokenizer = open_tokenizer(folder, max_length)
        self.threads = threads
        self._inputs = {i.name for i in self.session.get_inputs()}

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        summed = np.sum(hidden, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> Iterator[np.ndarray]:
        for start in range(0, len(texts), max(batch_size, 1)):
            yield from self._run(texts[start : start + batch_size])

    def query_embed(self, text: str) -> Iterator[np.ndarray]:
        yield self._run([text])[0]
