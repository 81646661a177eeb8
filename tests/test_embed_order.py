"""Embedding order by expected use: library code (the most referenced files first) before tests,
tests before documents and data, shortest first inside each stretch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.indexing import embed_order, embedder
from coderag_tui.service import CodeRag


def test_tiers_and_references_order_the_chunks() -> None:
    facts = {1: ("docs/guide.md", "markdown", 10), 2: ("tests/test_core.py", "python", 10),
             3: ("pkg/core.py", "python", 50), 4: ("pkg/util.py", "python", 5), 5: ("setup.cfg", "ini", 3),
             6: ("pkg/core.py", "python", 20)}
    pending = [(i, f"h{i}") for i in sorted(facts)]
    block = embed_order.BLOCK
    try:
        embed_order.BLOCK = 1  # stretches of one: the order of use alone
        order = [i for i, _ in embed_order.expected_use_order(pending, facts, {"pkg/core.py": 3})]
        assert order == [6, 3, 4, 2, 1, 5]  # core (referenced) before util, then tests, docs, config
        embed_order.BLOCK = 100  # one stretch: shortest first inside it (ties in the order of use)
        order = [i for i, _ in embed_order.expected_use_order(pending, facts, {"pkg/core.py": 3})]
        assert order == [5, 4, 2, 1, 6, 3]
    finally:
        embed_order.BLOCK = block


class Recorder:
    """A stand-in model that records the order texts reach it (a unit test of the embedder's loop)."""

    def __init__(self) -> None:
        self.heads: list[str] = []

    def embed(self, pieces: Iterable[str], batch_size: int = 32) -> Iterator[np.ndarray]:
        for p in pieces:
            self.heads.append(p.split("\n", 1)[0])
            yield np.ones(4, dtype=np.float32) / 2


FILES: dict[str, str | bytes] = {
    "pkg/core.py": "".join(f"def core_{i}(x):\n    return x + {i}\n\n\n" for i in range(6)),
    "pkg/leaf.py": "".join(f"def leaf_{i}(x):\n    return core_{i}(x)\n\n\n" for i in range(6))
                   + "from pkg.core import core_0\n",
    "pkg/other.py": "from pkg.core import core_1\n\n\ndef other(x):\n    return core_1(x)\n",
    "tests/test_core.py": "".join(f"def test_core_{i}():\n    assert core_{i}(1)\n\n\n" for i in range(6)),
    "docs/guide.md": "".join(f"# Part {i}\n\nHow core {i} works, in words.\n\n" for i in range(6)),
}


def test_a_long_run_embeds_library_code_first(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag], monkeypatch: pytest.MonkeyPatch) -> None:
    service = open_service(make_repo(FILES))
    recorder = Recorder()
    monkeypatch.setattr(embed_order, "BLOCK", 2)
    model = embedder.EmbeddingModel("recorder", recorder, 4, 8)
    embedder.embed_index(service.db, model)
    paths = [next((p for p in FILES if p in head), head) for head in recorder.heads]
    tiers = [embed_order.tier(p, "markdown" if p.endswith(".md") else "python") for p in paths]
    assert tiers == sorted(tiers), paths
    library = [p for p in paths if p.startswith("pkg/")]
    assert library.index("pkg/core.py") < library.index("pkg/leaf.py"), library  # core is referenced most
