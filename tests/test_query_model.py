"""The query model: the bundled model on onnxruntime directly gives fastembed's vectors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from coderag_tui.config import EmbedSettings
from coderag_tui.indexing import embedder
from coderag_tui.indexing.onnx_model import OnnxEmbedder, _optimised_path

TEXTS = [
    "where is the request context pushed",
    "def slugify(title):\n    return '-'.join(title.lower().split())",
    "Ünïcödé — 漢字 and emoji 🚀 in a docstring",
    "",
    # longer than the 256-token window: both must cut it at the same place
    "\n".join(f"    value_{i} = compute_{i}(request, session, retries={i})" for i in range(120)),
]


@pytest.fixture(scope="module")
def fastembed_model() -> embedder.EmbeddingModel:
    return embedder.load_model(EmbedSettings(threads=1))


def test_direct_query_vectors_match_fastembed(fastembed_model: embedder.EmbeddingModel) -> None:
    direct = embedder.load_query_model(EmbedSettings(threads=1))
    assert isinstance(direct.raw, OnnxEmbedder)
    assert direct.id == fastembed_model.id and direct.dim == fastembed_model.dim == 384
    for text in TEXTS:
        ours, theirs = direct.query(text), fastembed_model.query(text)
        assert ours.dtype == np.float32 and abs(float(np.linalg.norm(ours)) - 1.0) < 1e-5
        assert float(np.dot(ours, theirs)) > 0.9999, text[:40]
    # a padded batch pools each text over its own tokens only
    batch = direct.embed(TEXTS)
    for row, text in zip(batch, TEXTS, strict=True):
        assert float(np.dot(row, direct.query(text))) > 0.9999


def test_the_optimised_graph_is_cached_and_a_broken_one_rebuilt(fastembed_model: embedder.EmbeddingModel) -> None:
    import onnxruntime

    folder = embedder.bundled_model_dir()
    cached = _optimised_path(folder, onnxruntime.__version__)
    cached.unlink(missing_ok=True)
    first = OnnxEmbedder(folder, 256, 1)
    data = cached.with_suffix(".data")  # the weights, mapped rather than parsed on later loads
    assert cached.is_file() and data.stat().st_size > 10 * cached.stat().st_size
    size = cached.stat().st_size
    again = OnnxEmbedder(folder, 256, 1)  # from the cached graph, optimisations off
    opts = again.session.get_session_options()
    assert opts.graph_optimization_level == onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    text = TEXTS[1]
    assert float(np.dot(next(first.query_embed(text)), next(again.query_embed(text)))) > 0.99999
    cached.write_bytes(b"not an onnx graph")
    rebuilt = OnnxEmbedder(folder, 256, 1)
    assert cached.stat().st_size == size
    assert float(np.dot(next(rebuilt.query_embed(text)), fastembed_model.query(text))) > 0.9999
    data.unlink()  # weights gone: the graph cannot load, so both are made again
    assert float(np.dot(next(OnnxEmbedder(folder, 256, 1).query_embed(text)), fastembed_model.query(text))) > 0.9999
    assert data.is_file() and cached.stat().st_size == size
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_search_process_imports_no_fastembed_textual_or_llama() -> None:
    """What a one-shot `coderag search` loads, a query embedded included: none of these."""
    code = (
        "import sys\n"
        "from coderag_tui.cli.main import main\n"
        "from coderag_tui.retrieval.search import Searcher\n"
        "from coderag_tui.config import EmbedSettings\n"
        "from coderag_tui.indexing.embedder import load_query_model\n"
        "assert load_query_model(EmbedSettings(threads=1)).query('where is the request pushed').shape == (384,)\n"
        "bad = [m for m in ('fastembed', 'textual', 'llama_cpp', 'huggingface_hub', 'tree_sitter')\n"
        "       if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_query_model_is_preloaded_once_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.retrieval import state as state_module

    calls: list[EmbedSettings] = []
    real = state_module.load_query_model

    def counting(settings: EmbedSettings) -> embedder.EmbeddingModel:
        calls.append(settings)
        return real(settings)

    monkeypatch.setattr(state_module, "load_query_model", counting)
    state = state_module.RetrievalState()
    settings = EmbedSettings()
    state.preload_query_model(settings)
    state.preload_query_model(settings)  # already loading: no second thread
    model = state.query_model(settings)  # waits for the load under way
    state.preload_query_model(settings)  # loaded: nothing to do
    assert state.query_model(settings) is model and len(calls) == 1
    assert isinstance(model.raw, OnnxEmbedder)
    assert model.raw.session.get_session_options().intra_op_num_threads == state_module.QUERY_THREADS
