"""What the service keeps between retrieval calls: the embedding model (loaded lazily, once,
thread-safely) and the repo graph of the current index state."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np

from coderag_tui.config import EmbedSettings
from coderag_tui.indexing.embedder import (
    EmbeddingModel,
    load_model,
    load_query_model,
    model_identity,
)
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.repo_map import RepoGraph
from coderag_tui.store import retrieval_reads
from coderag_tui.store.backend import StoreBackend

QUERY_CACHE = 256
# A query is one short text: onnxruntime's second thread mostly spins on it (measured on 2 cores:
# ~50 ms more CPU per search and no faster, since BM25 runs beside it). Documents are embedded in
# batches with `[embed] threads`.
QUERY_THREADS = 1


class RetrievalState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._graph_lock = threading.Lock()
        self._model: EmbeddingModel | None = None
        self._model_key: tuple[object, ...] = ()
        self._query_model: EmbeddingModel | None = None
        self._query_key: tuple[object, ...] = ()
        self._preloading = False
        self._graph: RepoGraph | None = None
        self._graph_key: tuple[object, ...] = ()
        self._queries: dict[tuple[str, str], np.ndarray] = {}  # recent query vectors
        self.matrix = VectorMatrix()  # the index's vectors in memory, for fast KNN

    @staticmethod
    def _key(settings: EmbedSettings) -> tuple[object, ...]:
        return (settings.model, settings.model_path, settings.threads, settings.max_length, settings.batch_size,
                settings.pool_windows)

    def model_loaded(self, settings: EmbedSettings) -> bool:
        return self._model is not None and self._model_key == self._key(settings)

    def model(self, settings: EmbedSettings) -> EmbeddingModel:
        """The embedding model for the settings (loaded on first use, then cached)."""
        key = self._key(settings)
        with self._lock:
            if self._model is None or self._model_key != key:
                self._model = load_model(settings)
                self._model_key = key
            return self._model

    def query_model(self, settings: EmbedSettings) -> EmbeddingModel:
        """The model that embeds queries: on QUERY_THREADS threads (loaded on first use, the
        bundled model without fastembed; the document model itself when it already runs so)."""
        key = self._key(settings)
        with self._lock:
            if self._query_model is None or self._query_key != key:
                if self._model is not None and self._model_key == key and settings.threads == QUERY_THREADS:
                    self._query_model = self._model
                else:
                    self._query_model = load_query_model(dataclasses.replace(settings, threads=QUERY_THREADS))
                self._query_key = key
            return self._query_model

    def preload_query_model(self, settings: EmbedSettings) -> None:
        """Start loading the query model on a background thread, unless loaded. onnxruntime
        builds the session without the GIL, so a one-shot search's imports, connection and
        keyword search go on meanwhile instead of waiting ~0.15-0.2 s of CPU for it. A load
        error is not raised here: the search that needs the model raises it."""
        with self._lock:
            if self._query_model is not None and self._query_key == self._key(settings):
                return
            if self._preloading:
                return
            self._preloading = True

        def load() -> None:
            try:
                self.query_model(settings)
            except Exception:  # noqa: BLE001 - raised again by the search that needs it
                pass
            finally:
                with self._lock:
                    self._preloading = False

        threading.Thread(target=load, name="coderag-query-model", daemon=True).start()

    def query_embedder(self, db: StoreBackend, settings: EmbedSettings) -> Callable[[str], np.ndarray | None] | None:
        """A function giving a query's vector, or None when the index has no usable vectors
        (none yet, or made by another model): then the model is not even loaded."""
        if not settings.enabled or db.vector_model() != model_identity(settings):
            return None
        self.preload_query_model(settings)

        def embed(text: str) -> np.ndarray | None:
            key = (model_identity(settings), text)
            vec = self._queries.get(key)
            if vec is None:
                vec = self.query_model(settings).query(text)
                with self._lock:
                    self._queries[key] = vec
                    while len(self._queries) > QUERY_CACHE:
                        self._queries.pop(next(iter(self._queries)))
            return vec

        return embed

    def graph(self, db: StoreBackend) -> RepoGraph:
        key = (db.get_meta("last_update"), *retrieval_reads.graph_state(db))
        with self._graph_lock:
            if self._graph is None or self._graph_key != key:
                self._graph = RepoGraph.load(db)
                self._graph_key = key
            return self._graph
