"""An answer of the real bundled GGUF from a PostgreSQL store (`ask --store URL`): the context
composed from PostgreSQL, the configured (bundled) model, verified citations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main
from tests.helpers.files import write_tree
from tests.helpers.shop import FILES

pytestmark = pytest.mark.slow


def test_the_bundled_model_answers_from_postgres(pg_url: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from coderag_tui.answering.providers.local import bundled_model_path

    if importlib.util.find_spec("llama_cpp") is None or bundled_model_path() is None:
        pytest.skip("needs llama-cpp-python and the bundled GGUF")
    url = request.getfixturevalue("pg_url")
    repo = write_tree(tmp_path / "shop", FILES)
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\nmax_tokens = 48\nn_ctx = 2048\n"
                      "cache_similarity = 0\n")
    where = ["--repo", str(repo), "--store", url, "--config", str(config)]
    assert main(["index", *where]) == 0
    capsys.readouterr()
    assert main(["ask", "How is the total price of the cart computed?", "--json", *where]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["answer"].strip()
    assert any(s["path"] == "shop/cart.py" for s in doc["sources"]), doc["sources"]
    assert doc["stats"]["tokens"] > 0
