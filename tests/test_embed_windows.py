"""A chunk longer than the model's window is embedded whole: windows pooled, not a cut text."""

from __future__ import annotations

import numpy as np
import pytest

from coderag_tui.config import EmbedSettings
from coderag_tui.indexing.embedder import EmbeddingModel, load_model, model_identity
from coderag_tui.indexing.windows import pool

HEAD = "# shop/cart.py\n# Scope: Cart\n# Language: python\n"
BODY = "".join(
    f"    def step_{i}(self, basket_{i}):\n        total_{i} = sum(item.price for item in basket_{i})\n"
    f"        return self.apply_discount_{i}(total_{i}, rate={i})\n\n" for i in range(40))
TAIL = "    def ship_parcel(self, address):\n        return courier.send(self.items, to=address)\n"


@pytest.fixture(scope="module")
def models() -> tuple[EmbeddingModel, EmbeddingModel]:
    return (load_model(EmbedSettings(threads=1)), load_model(EmbedSettings(threads=1, pool_windows=False)))


def test_windows_cover_the_text_at_line_ends(models: tuple[EmbeddingModel, EmbeddingModel]) -> None:
    windows = models[0]._windows
    assert windows is not None and windows.size == 254  # 256 word pieces less [CLS] and [SEP]
    parts = windows.split(HEAD, BODY + TAIL)
    assert len(parts) > 3
    assert all(text.startswith(HEAD) for text, _ in parts)  # each window keeps the header
    assert "".join(text[len(HEAD):] for text, _ in parts) == BODY + TAIL  # nothing lost, nothing twice
    assert all(text.endswith("\n") for text, _ in parts)
    assert all(windows.count(text) <= windows.size for text, _ in parts)
    assert sum(w for _, w in parts) == windows.count(BODY + TAIL)
    assert windows.split(HEAD, TAIL) == [(HEAD + TAIL, windows.count(TAIL))]


def test_long_chunk_is_pooled_and_short_one_unchanged(models: tuple[EmbeddingModel, EmbeddingModel]) -> None:
    pooled, cut = models
    assert pooled.id != cut.id and pooled.id == model_identity(EmbedSettings())
    short = pooled.embed([TAIL], heads=[HEAD])[0]
    assert float(np.dot(short, cut.embed([HEAD + TAIL])[0])) > 0.9999
    long_vec, cut_vec = pooled.embed([BODY + TAIL], heads=[HEAD])[0], cut.embed([HEAD + BODY + TAIL])[0]
    assert abs(float(np.linalg.norm(long_vec)) - 1.0) < 1e-4
    assert pooled._windows is not None
    parts = pooled._windows.split(HEAD, BODY + TAIL)
    each = cut.embed([t for t, _ in parts])
    assert np.allclose(long_vec, pool(each, [w for _, w in parts]), atol=1e-5)
    # the end of the chunk counts: shipping is nearer the pooled vector than the cut one
    query = pooled.query("send the parcel to an address with the courier")
    assert float(np.dot(query, long_vec)) > float(np.dot(query, cut_vec))
    # several texts in one call: each gets its own vector, in order
    both = pooled.embed([TAIL, BODY + TAIL], heads=[HEAD, HEAD])
    assert np.allclose(both[0], short, atol=1e-5) and np.allclose(both[1], long_vec, atol=1e-5)
