"""The bundled embedding model run by onnxruntime and tokenizers directly, for queries.

A one-shot command embeds one query and exits, so what counts is the time to the first
vector. Through fastembed that was ~1.1 s before the first token: importing fastembed alone
pulls in huggingface_hub, httpx, requests and its image stack. Here the same computation
(BERT tokenizer truncated to `max_length`, `last_hidden_state` mean-pooled over the attention
mask, L2-normalised) needs only onnxruntime, tokenizers and numpy.

Loading the int8 ONNX file with onnxruntime's graph optimisations spends ~0.2 s of CPU
folding and fusing the graph on every start. The basic (hardware-independent) optimisations
are therefore applied once and the optimised graph is kept beside the model in the cache
folder: `model.basic-ort<version>.onnx` and its weights in `model.basic-ort<version>.data`
(~90 MB: the folded weights are float32), which onnxruntime maps instead of parsing. Later
starts load it with optimisations off: ~0.05 s of CPU. A broken graph is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
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


def _optimise(ort: Any, source: Path, cached: Path, threads: int) -> Any:
    """A session of `source` with the basic optimisations, whose graph is saved as `cached`
    (+ its weights in `cached`.data, which later loads map instead of parsing). Both are written
    in a private folder and moved in, weights first: a `cached` graph is always complete."""
    data = cached.with_suffix(".data")
    work = cached.parent / f".{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    so = _options(ort, threads, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    try:
        work.mkdir(exist_ok=True)
        so.optimized_model_filepath = str(work / cached.name)
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", data.name)
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        session = ort.InferenceSession(str(source), so, providers=["CPUExecutionProvider"])
        if (work / cached.name).is_file() and (work / data.name).is_file():
            os.replace(work / data.name, data)
            os.replace(work / cached.name, cached)
        return session
    except Exception:  # a read-only cache, no room: run without keeping the optimised graph
        return ort.InferenceSession(str(source), _options(ort, threads, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
                                    providers=["CPUExecutionProvider"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def open_session(folder: Path, threads: int) -> Any:
    """An onnxruntime session of `folder/model.onnx`, from the cached optimised graph when
    there is one (else optimise now and try to cache the result)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    source = folder / "model.onnx"
    cached = _optimised_path(folder, ort.__version__)
    if cached.is_file() and cached.stat().st_mtime >= source.stat().st_mtime:
        try:
            return ort.InferenceSession(str(cached), _options(ort, threads, ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                                        providers=["CPUExecutionProvider"])
        except Exception:  # a truncated or foreign file: rebuilt below
            cached.unlink(missing_ok=True)
    return _optimise(ort, source, cached, threads)


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
